// Copyright 2026 The memtrace Authors.
//
// OutputFile (analysis/output_file.h): a report or export is written whole or not at all,
// and a path nobody can write is refused before any work.

#include "analysis/output_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace memtrace {
namespace {

std::string Dir(const std::string& name) {
  const char* tmp = getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The names in `dir`, but "." and "..".
int Entries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++n;
  }
  closedir(d);
  return n;
}

TEST(OutputFileTest, ACommittedFileHoldsEveryByteAndNoScratchFileStays) {
  const std::string dir = Dir("committed");
  const std::string path = dir + "/out.txt";
  absl::StatusOr<OutputFile> out = OutputFile::Create(path);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "the destination appears only at Commit()";
  ASSERT_TRUE(out->Write("hello, ").ok());
  ASSERT_TRUE(out->Write("world").ok());
  ASSERT_TRUE(out->Commit().ok());
  EXPECT_EQ(Contents(path), "hello, world");
  EXPECT_EQ(Entries(dir), 1);
  EXPECT_FALSE(out->Write("more").ok()) << "written after Commit()";
}

TEST(OutputFileTest, AFileNeverCommittedLeavesTheEarlierOneAsItWas) {
  const std::string dir = Dir("abandoned");
  const std::string path = dir + "/report.html";
  std::ofstream(path) << "the earlier report";
  {
    absl::StatusOr<OutputFile> out = OutputFile::Create(path);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE(out->Write("half a page").ok());
  }  // the work failed: no Commit()
  EXPECT_EQ(Contents(path), "the earlier report");
  EXPECT_EQ(Entries(dir), 1) << "the scratch file was removed";
}

TEST(OutputFileTest, AnUnwritablePathIsRefusedAtCreateWithThePathAndTheReason) {
  const std::string dir = Dir("refused");
  absl::StatusOr<OutputFile> missing = OutputFile::Create(dir + "/no_such_dir/out.pb");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir + "/no_such_dir/out.pb"), std::string::npos)
      << missing.status();
  EXPECT_NE(missing.status().message().find("No such file or directory"), std::string::npos)
      << missing.status();
  absl::StatusOr<OutputFile> directory = OutputFile::Create(dir);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("is a directory"), std::string::npos)
      << directory.status();
  EXPECT_FALSE(OutputFile::Create("").ok());
}

// A rename would replace the link itself; the file it names is written instead.
TEST(OutputFileTest, ASymbolicLinkIsWrittenThroughAndStaysALink) {
  const std::string dir = Dir("linked");
  const std::string target = dir + "/target.txt";
  const std::string link = dir + "/link.txt";
  std::ofstream(target) << "old";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  absl::StatusOr<OutputFile> out = OutputFile::Create(link);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->Write("new").ok());
  ASSERT_TRUE(out->Commit().ok());
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(Contents(target), "new");
  EXPECT_EQ(Entries(dir), 2);
}

TEST(OutputFileTest, AMovedFileIsCommittedOnceAndTheEmptyOneDoesNothing) {
  const std::string dir = Dir("moved");
  const std::string path = dir + "/out.txt";
  absl::StatusOr<OutputFile> out = OutputFile::Create(path);
  ASSERT_TRUE(out.ok()) << out.status();
  OutputFile moved = *std::move(out);
  ASSERT_TRUE(moved.Write("x").ok());
  ASSERT_TRUE(moved.Commit().ok());
  EXPECT_EQ(Contents(path), "x");
  EXPECT_EQ(Entries(dir), 1);
}

}  // namespace
}  // namespace memtrace
