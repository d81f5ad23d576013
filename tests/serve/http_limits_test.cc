// The server's HTTP framing under hostile or unusual clients, over raw sockets on 127.0.0.1: the
// limits on a request's head, bodies refused before they are read (no key, no route) or inflated
// past --max-body-bytes, pipelined requests, and ambiguous body lengths.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "serve/server.h"
#include "testing/fixture.h"

namespace tfm::serve {
namespace {

using namespace std::chrono_literals;

// A server on a free port of 127.0.0.1 with the tiny model, listening on its own thread.
struct Served {
  explicit Served(ServerOptions o) {
    o.models = {parse_model_spec("tiny=" + std::string(TFM_FIXTURE_DIR) + "/tiny_model/model.safetensors")};
    o.port = 0;
    server = std::make_unique<Server>(o);
    port = server->bind();
    thread = std::thread([this] { server->listen(); });
  }
  ~Served() {
    server->stop();
    thread.join();
  }
  std::unique_ptr<Server> server;
  int port = 0;
  std::thread thread;
};

// Sends `bytes` in one write on a new connection; returns what comes back until the server closes
// the connection, or nothing more came for a second (or 5 s have passed).
std::string send_and_read(int port, const std::string& bytes) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(sock, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string answer;
  const auto until = std::chrono::steady_clock::now() + 5s;
  for (char buf[16384]; std::chrono::steady_clock::now() < until;) {
    pollfd p{sock, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) break;
    const ssize_t n = ::recv(sock, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(sock);
  return answer;
}

// The status of each response in `answer`, in order (each framed by its Content-Length); -1 for
// bytes that do not start a response.
std::vector<int> statuses(const std::string& answer) {
  std::vector<int> out;
  const std::regex status_line("HTTP/1\\.1 (\\d{3}) [^\r]*\r\n");
  const std::regex length("\r\nContent-Length: (\\d+)\r\n", std::regex::icase);
  for (size_t at = 0; at < answer.size();) {
    const size_t end = answer.find("\r\n\r\n", at);
    const std::string head = answer.substr(at, end == std::string::npos ? std::string::npos : end + 2 - at);
    std::smatch m;
    if (end == std::string::npos || !std::regex_search(head, m, status_line, std::regex_constants::match_continuous)) {
      out.push_back(-1);
      break;
    }
    out.push_back(std::stoi(m[1]));
    at = end + 4 + (std::regex_search(head, m, length) ? std::stoul(m[1]) : 0);
  }
  return out;
}

// A request; the connection ends after its answer when `last`.
std::string get(const std::string& path, const std::string& headers = "", bool last = true) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + (last ? "Connection: close\r\n" : "") +
         "\r\n";
}

std::string post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The start of a gzip stream of `bytes` spaces, flushed but never finished: it inflates to them,
// and its end never comes.
std::string endless_gzip(size_t bytes) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string in(bytes, ' '), out(bytes / 100 + 4096, '\0');
  z.next_in = reinterpret_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_SYNC_FLUSH), Z_OK);
  EXPECT_EQ(z.avail_in, 0u);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

// A chunked, gzip-compressed request whose body never ends: its first chunk inflates to 1 MiB.
std::string endless_compressed_post(const std::string& path, const std::string& headers) {
  const std::string chunk = endless_gzip(1 << 20);
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + headers +
         "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + size + chunk + "\r\n";
}

TEST(ServerHttp, TheHeadIsBoundedInHeaderCountAndBytes) {
  ServerOptions o;
  o.api_key = "k";
  const Served s(o);
  auto headers = [](int count, size_t value_bytes) {
    std::string h;
    for (int i = 0; i < count; ++i) h += "X-" + std::to_string(i) + ": " + std::string(value_bytes, 'v') + "\r\n";
    return h;
  };
  // 100 header fields with Host and Connection: served.
  EXPECT_EQ(statuses(send_and_read(s.port, get("/health", headers(98, 1)))), std::vector<int>{200});
  const std::string many = send_and_read(s.port, get("/health", headers(150, 1)));
  EXPECT_EQ(statuses(many), std::vector<int>{431}) << many;
  EXPECT_NE(many.find("more than 100 header fields"), std::string::npos) << many;
  // 40 lines of 1000 bytes, each under the line limit, together over the 32 KiB of a head.
  const std::string big = send_and_read(s.port, get("/health", headers(40, 1000)));
  EXPECT_EQ(statuses(big), std::vector<int>{431}) << big;
  EXPECT_NE(big.find("over 32768 bytes"), std::string::npos) << big;
  // An endless head is refused once over the limit, without waiting for its end.
  const std::string endless = send_and_read(s.port, "GET /health HTTP/1.1\r\n" + headers(2000, 1));
  EXPECT_EQ(statuses(endless), std::vector<int>{431}) << endless;
  // Without the key, a request is refused on its head, before its body is sent (or read).
  const std::string unkeyed =
      send_and_read(s.port, "POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n");
  EXPECT_EQ(statuses(unkeyed), std::vector<int>{401}) << unkeyed;
  EXPECT_NE(unkeyed.find("Connection: close"), std::string::npos) << unkeyed;
}

TEST(ServerHttp, CompressedBodiesStopAtTheLimitAndUnauthorizedOnesAreNotRead) {
  ServerOptions o;
  o.api_key = "k";
  o.max_body_bytes = 4096;
  const Served s(o);
  // Keyed: inflating stops at 4096 bytes of output, and 413 comes at once, the body still unended.
  const std::string over = send_and_read(s.port, endless_compressed_post("/v1/translate", "X-API-Key: k\r\n"));
  EXPECT_EQ(statuses(over), std::vector<int>{413}) << over;
  EXPECT_NE(over.find("once decompressed"), std::string::npos) << over;
  // Without the key, or to no endpoint, or with another method: refused before a byte is inflated.
  const std::string unkeyed = send_and_read(s.port, endless_compressed_post("/v1/translate", ""));
  EXPECT_EQ(statuses(unkeyed), std::vector<int>{401}) << unkeyed;
  const std::string nowhere = send_and_read(s.port, endless_compressed_post("/nope", "X-API-Key: k\r\n"));
  EXPECT_EQ(statuses(nowhere), std::vector<int>{404}) << nowhere;
  const std::string health = send_and_read(s.port, endless_compressed_post("/health", ""));
  EXPECT_EQ(statuses(health), std::vector<int>{405}) << health;
  // A declared length over the limit: 413 on the head, without waiting for the body.
  const std::string declared = send_and_read(
      s.port, "POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: k\r\nContent-Length: 5000\r\n\r\n");
  EXPECT_EQ(statuses(declared), std::vector<int>{413}) << declared;
}

TEST(ServerHttp, PipelinedRequestsAreEachAnsweredInOrder) {
  const Served s{ServerOptions{}};
  const std::string answer =
      send_and_read(s.port, get("/health", "", false) + post("/v1/translate", R"({"text": "one"})") +
                                get("/v1/models", "", false) + get("/nope", "", false) + get("/openapi.json"));
  EXPECT_EQ(statuses(answer), (std::vector<int>{200, 200, 200, 404, 200})) << answer;
  const size_t health = answer.find("\"status\""), translation = answer.find("\"translations\""),
               models = answer.find("\"models\":["), openapi = answer.find("\"openapi\"");
  EXPECT_LT(health, translation);
  EXPECT_LT(translation, models);
  EXPECT_LT(models, openapi);
  EXPECT_NE(openapi, std::string::npos);
  // A POST without a declared length has no body: the request after it is not taken for one.
  const std::string unframed =
      send_and_read(s.port, "POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + get("/health"));
  EXPECT_EQ(statuses(unframed), (std::vector<int>{400, 200})) << unframed;
}

TEST(ServerHttp, AmbiguousBodyLengthsAreRefused) {
  const Served s{ServerOptions{}};
  const std::string body = R"({"text":"one"})";  // 14 bytes
  const std::string head =
      "POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n";
  const std::string conflicting =
      send_and_read(s.port, head + "Content-Length: 14\r\nContent-Length: 3\r\n\r\n" + body);
  EXPECT_EQ(statuses(conflicting), std::vector<int>{400}) << conflicting;
  EXPECT_NE(conflicting.find("conflicting Content-Length headers (14 and 3)"), std::string::npos) << conflicting;
  const std::string both =
      send_and_read(s.port, head + "Content-Length: 14\r\nTransfer-Encoding: chunked\r\n\r\ne\r\n" + body +
                                "\r\n0\r\n\r\n");
  EXPECT_EQ(statuses(both), std::vector<int>{400}) << both;
  EXPECT_NE(both.find("both Content-Length and Transfer-Encoding"), std::string::npos) << both;
  const std::string coding = send_and_read(s.port, head + "Transfer-Encoding: gzip, chunked\r\n\r\n" + body);
  EXPECT_EQ(statuses(coding), std::vector<int>{501}) << coding;
  const std::string spaced = send_and_read(s.port, head + "Content-Length : 3\r\nContent-Length: 14\r\n\r\n" + body);
  EXPECT_EQ(statuses(spaced), std::vector<int>{400}) << spaced;
  const std::string bare_lf = send_and_read(s.port, "GET /health HTTP/1.1\nHost: 127.0.0.1\nConnection: close\n\n");
  EXPECT_EQ(statuses(bare_lf), std::vector<int>{400}) << bare_lf;
  // The same length twice is one length.
  const std::string same = send_and_read(s.port, head + "Content-Length: 14\r\nContent-Length: 14\r\n\r\n" + body);
  EXPECT_EQ(statuses(same), std::vector<int>{200}) << same;
}

}  // namespace
}  // namespace tfm::serve
