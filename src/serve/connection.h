#pragma once
// One client connection as the HTTP library's Stream: a read buffer kept for the connection's whole
// life (so bytes of pipelined requests read ahead are never lost between requests), the request
// head examined in it before the library parses it, read and write timeouts, and a lingering close.
#include <httplib.h>

#include <string>
#include <string_view>

namespace tfm::serve {

class Connection : public httplib::Stream {
 public:
  Connection(socket_t sock, int read_timeout_ms, int write_timeout_ms);

  // httplib::Stream: reads come from the buffer first, then the socket (within the read timeout).
  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  using httplib::Stream::write;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return sock_; }

  // The bytes received and not yet read.
  std::string_view buffered() const { return std::string_view(buffer_).substr(offset_); }
  // Waits up to `timeout_ms` for bytes to read (or the end of the stream): true when they came.
  bool wait(int timeout_ms) const;
  // Receives what the socket has (waiting up to `timeout_ms`) into the buffer, at most `most`
  // bytes: the count; 0 at the end of the stream; -1 on a timeout or an error.
  ssize_t receive(size_t most, int timeout_ms);
  // Drops the first `n` buffered bytes (a request answered without the library).
  void consume(size_t n) { offset_ += n; }
  // Puts `bytes` into the buffer `at` bytes past what is read (a header added to a request head).
  void insert(size_t at, std::string_view bytes);
  // Writes all of `bytes`; false when the client is gone or the write timed out.
  bool write_all(std::string_view bytes);
  // Ends the connection without losing the answer just written: stops sending, then reads and drops
  // what the client still sends (at most `most` bytes, for at most `timeout_ms`) before closing,
  // since closing with unread bytes would reset the connection and could destroy the answer.
  void linger_close(size_t most, int timeout_ms);
  // Closes at once.
  void close();

 private:
  socket_t sock_;
  int read_timeout_ms_, write_timeout_ms_;
  std::string buffer_;
  size_t offset_ = 0;
};

}  // namespace tfm::serve
