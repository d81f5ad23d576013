// One client connection as the HTTP library's Stream, with a read buffer that lives as long as the
// connection: the library's own stream was made anew for each request, and the bytes of pipelined
// requests it had read ahead were lost with it.
#include "serve/connection.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace tfm::serve {

namespace {

// Waits for `events` on `sock` for up to `timeout_ms`: true when they came.
bool wait_for(socket_t sock, short events, int timeout_ms) {
  pollfd p{sock, events, 0};
  int r;
  do r = ::poll(&p, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  return r > 0;
}

// The address and port of a socket address, as text.
void describe(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    port = ntohs(a.sin6_port);
  }
  ip = text;
}

}  // namespace

Connection::Connection(socket_t sock, int read_timeout_ms, int write_timeout_ms)
    : sock_(sock), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

bool Connection::is_readable() const { return wait(read_timeout_ms_); }

bool Connection::wait(int timeout_ms) const { return offset_ < buffer_.size() || wait_for(sock_, POLLIN, timeout_ms); }

bool Connection::is_writable() const { return wait_for(sock_, POLLOUT, write_timeout_ms_); }

ssize_t Connection::receive(size_t most, int timeout_ms) {
  if (!wait_for(sock_, POLLIN, timeout_ms)) return -1;
  if (offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > buffer_.size() / 2) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  const size_t old = buffer_.size();
  buffer_.resize(old + most);
  ssize_t n;
  do n = ::recv(sock_, buffer_.data() + old, most, 0);
  while (n < 0 && errno == EINTR);
  buffer_.resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
  return n;
}

ssize_t Connection::read(char* ptr, size_t size) {
  if (offset_ == buffer_.size()) {
    const ssize_t n = receive(std::max<size_t>(size, 16384), read_timeout_ms_);
    if (n <= 0) return n;
  }
  const size_t n = std::min(size, buffer_.size() - offset_);
  std::memcpy(ptr, buffer_.data() + offset_, n);
  offset_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t Connection::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  ssize_t n;
  do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

bool Connection::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(bytes.data(), bytes.size());
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void Connection::insert(size_t at, std::string_view bytes) { buffer_.insert(offset_ + at, bytes); }

void Connection::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) describe(addr, ip, port);
}

void Connection::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) describe(addr, ip, port);
}

void Connection::linger_close(size_t most, int timeout_ms) {
  ::shutdown(sock_, SHUT_WR);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char scratch[16384];
  for (size_t dropped = 0; dropped < most;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !wait_for(sock_, POLLIN, static_cast<int>(left.count()))) break;
    const ssize_t n = ::recv(sock_, scratch, sizeof scratch, 0);
    if (n <= 0) break;
    dropped += static_cast<size_t>(n);
  }
  ::close(sock_);
}

void Connection::close() {
  ::shutdown(sock_, SHUT_RDWR);
  ::close(sock_);
}

}  // namespace tfm::serve
