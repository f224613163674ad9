// Copyright 2026 The memtrace Authors.

#include "analysis/debuginfod.h"

#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace memtrace {
namespace {

// Every answer this process has had, by kind, build id and the servers and cache asked
// (the environment that says which): asked once each.
using Question = std::tuple<Debuginfod::Kind, std::string, std::string, std::string>;
struct Answers {
  absl::Mutex mu;
  debuginfod_client* client ABSL_GUARDED_BY(mu) = nullptr;  // begun on the first request
  std::map<Question, absl::StatusOr<std::string>> by_question ABSL_GUARDED_BY(mu);
};

Answers& TheAnswers() {
  static Answers* const answers = new Answers;  // never destroyed: used until exit
  return *answers;
}

}  // namespace

std::string Debuginfod::Urls() {
  const char* urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
  return urls != nullptr ? std::string(urls) : std::string();
}

bool Debuginfod::HasServers() { return Urls().find_first_not_of(" \t") != std::string::npos; }

absl::StatusOr<std::string> Debuginfod::Fetch(Kind kind, std::string_view build_id,
                                              std::string_view module, std::FILE* progress) {
  const std::string urls = Urls();
  if (!HasServers()) {
    return absl::FailedPreconditionError(
        "no debuginfod server is named: set DEBUGINFOD_URLS (Debian's is "
        "https://debuginfod.debian.net)");
  }
  if (build_id.empty()) {
    return absl::FailedPreconditionError("the capture recorded no build id to ask by");
  }
  Answers& answers = TheAnswers();
  absl::MutexLock lock(&answers.mu);
  const char* cache = getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR);
  Question key{kind, std::string(build_id), urls, cache != nullptr ? cache : ""};
  if (auto known = answers.by_question.find(key); known != answers.by_question.end()) {
    return known->second;
  }
  const std::string& id_hex = std::get<1>(key);

  const char* what = kind == Kind::kExecutable ? "the file" : "the debug information";
  if (progress != nullptr) {
    fprintf(progress, "memtrace: asking debuginfod for %s of %.*s (build id %s)\n", what,
            static_cast<int>(module.size()), module.data(), id_hex.c_str());
    fflush(progress);
  }
  if (answers.client == nullptr) answers.client = debuginfod_begin();
  absl::StatusOr<std::string> answer;
  if (answers.client == nullptr) {
    answer = absl::UnavailableError(
        absl::StrCat("the debuginfod client could not start (", strerror(errno), ")"));
  } else {
    // A hexadecimal build id is passed as a string: length 0.
    const auto* id = reinterpret_cast<const unsigned char*>(id_hex.c_str());
    char* path = nullptr;
    const int fd = kind == Kind::kExecutable
                       ? debuginfod_find_executable(answers.client, id, 0, &path)
                       : debuginfod_find_debuginfo(answers.client, id, 0, &path);
    if (fd >= 0) {
      close(fd);
      answer = std::string(path != nullptr ? path : "");
      free(path);
      if (answer->empty()) answer = absl::InternalError("debuginfod gave no path");
    } else if (fd == -ENOENT) {
      answer = absl::NotFoundError(
          absl::StrCat("no server in DEBUGINFOD_URLS (", urls, ") has ", what));
    } else {
      answer = absl::UnavailableError(
          absl::StrCat("DEBUGINFOD_URLS (", urls, ") could not be asked: ", strerror(-fd)));
    }
  }
  answers.by_question.emplace(std::move(key), answer);
  return answer;
}

}  // namespace memtrace
