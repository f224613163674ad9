// Copyright 2026 The memtrace Authors.

#include "tests/fake_debuginfod.h"

#include <arpa/inet.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <cstdio>
#include <sstream>

namespace memtrace {
namespace {

void WriteAll(int fd, const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::string BuildIdOf(const std::string& path) {
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  std::string out;
  const void* bits = nullptr;
  const ssize_t len = elf != nullptr ? dwelf_elf_gnu_build_id(elf, &bits) : -1;
  for (ssize_t i = 0; i < len; ++i) {
    char byte[3];
    snprintf(byte, sizeof(byte), "%02x", static_cast<const unsigned char*>(bits)[i]);
    out += byte;
  }
  if (elf != nullptr) elf_end(elf);
  close(fd);
  return out;
}

FakeDebuginfod::FakeDebuginfod() {
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (listener_ < 0 || pipe2(wake_, O_CLOEXEC) != 0 ||
      bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener_, 16) != 0 ||
      getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return;
  }
  url_ = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  thread_ = std::thread([this] { Run(); });
}

FakeDebuginfod::~FakeDebuginfod() {
  if (thread_.joinable()) {
    const char byte = 0;
    (void)!write(wake_[1], &byte, 1);
    thread_.join();
  }
  for (int fd : {listener_, wake_[0], wake_[1]}) {
    if (fd >= 0) close(fd);
  }
}

void FakeDebuginfod::Serve(const std::string& build_id, const std::string& kind,
                           const std::string& file) {
  std::lock_guard<std::mutex> lock(mu_);
  files_["/buildid/" + build_id + "/" + kind] = file;
}

std::vector<std::string> FakeDebuginfod::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeDebuginfod::Run() {
  for (;;) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    const int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    Answer(connection);
    close(connection);
  }
}

void FakeDebuginfod::Answer(int connection) {
  // The request head, up to its blank line.
  std::string head;
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    const ssize_t n = read(connection, buffer, sizeof(buffer));
    if (n <= 0) return;
    head.append(buffer, static_cast<size_t>(n));
  }
  std::istringstream line(head.substr(0, head.find("\r\n")));
  std::string method, path;
  line >> method >> path;
  std::string file;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(path);
    if (auto it = files_.find(path); it != files_.end()) file = it->second;
  }
  std::ifstream in(file, std::ios::binary);
  if (method != "GET" || file.empty() || !in) {
    WriteAll(connection,
             "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return;
  }
  std::ostringstream body;
  body << in.rdbuf();
  WriteAll(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                       "Content-Length: " + std::to_string(body.str().size()) +
                           "\r\nConnection: close\r\n\r\n" + body.str());
}

}  // namespace memtrace
