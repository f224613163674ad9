// Copyright 2026 The memtrace Authors.
//
// What `memtrace live` shows (cli/internal/live_view.h): rows by live bytes or by growth
// since the first reply, "new" for a site the first reply did not list, the keys, and
// replies that are not snapshots.

#include "cli/internal/live_view.h"

#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace memtrace::cli_internal {
namespace {

std::string Usage(uint64_t bytes, uint64_t count) {
  return absl::StrCat("\"live_bytes\":", bytes, ",\"live_count\":", count);
}

// A reply with the sites `sites` (each "addr,path,bytes"), one scope and no layer.
std::string Reply(const std::vector<std::tuple<std::string, std::string, uint64_t>>& sites) {
  std::string rows;
  uint64_t total = 0;
  for (const auto& [addr, path, bytes] : sites) {
    absl::StrAppend(&rows, rows.empty() ? "" : ",", "{\"addr\":\"", addr,
                    "\",\"frames\":[],\"scope\":1,\"path\":\"", path, "\",", Usage(bytes, 1),
                    "}");
    total += bytes;
  }
  return absl::StrCat("{\"verdict\":\"complete\",\"totals\":{", Usage(total, sites.size()),
                      ",\"high_water_bytes\":", total,
                      "},\"scopes\":[{\"id\":1,\"path\":\"req\",\"usage\":{",
                      Usage(total, sites.size()), "}}],\"layers\":[],\"sites\":[", rows,
                      "],\"sites_omitted\":{\"pairs\":0,", Usage(0, 0), "}}");
}

// The names of the rows of the sites table, in order.
std::vector<std::string> SiteRows(const std::string& screen) {
  std::vector<std::string> rows;
  const size_t begin = screen.find("\nsites by");
  const size_t end = screen.find("\nscopes by");
  if (begin == std::string::npos || end == std::string::npos) return rows;
  size_t at = screen.find('\n', begin + 1) + 1;
  while (at < end) {
    const size_t eol = screen.find('\n', at);
    rows.push_back(screen.substr(at, eol - at));
    at = eol + 1;
  }
  return rows;
}

TEST(LiveViewTest, SortsByLiveBytesOrByGrowthSinceTheFirstReply) {
  LiveView view("4242", /*pid=*/0);  // no modules: sites are their addresses
  absl::StatusOr<std::string> first = view.Render(Reply({{"0x10", "req", 1000},
                                                         {"0x20", "(unscoped)", 5000}}));
  ASSERT_TRUE(first.ok()) << first.status();
  std::vector<std::string> rows = SiteRows(*first);
  ASSERT_EQ(rows.size(), 2u) << *first;
  EXPECT_EQ(rows[0].rfind("  0x20 ", 0), 0u) << rows[0];  // (unscoped) goes unsaid
  EXPECT_NE(rows[0].find("4.9 KiB"), std::string::npos) << rows[0];
  EXPECT_EQ(rows[1].rfind("  0x10 in req ", 0), 0u) << rows[1];
  EXPECT_NE(first->find("live 5.9 KiB in 2 blocks (0 B since the view started)"),
            std::string::npos)
      << *first;

  // 0x10 grew by 3000, 0x30 is new with 2000, 0x20 stayed.
  EXPECT_FALSE(view.Keys("g", 1));
  EXPECT_EQ(view.sort(), LiveView::Sort::kGrowth);
  absl::StatusOr<std::string> second = view.Render(
      Reply({{"0x10", "req", 4000}, {"0x20", "(unscoped)", 5000}, {"0x30", "req", 2000}}));
  ASSERT_TRUE(second.ok()) << second.status();
  rows = SiteRows(*second);
  ASSERT_EQ(rows.size(), 3u) << *second;
  EXPECT_EQ(rows[0].rfind("  0x10 in req ", 0), 0u) << *second;
  EXPECT_NE(rows[0].find("+2.9 KiB"), std::string::npos) << rows[0];
  EXPECT_EQ(rows[1].rfind("  0x30 in req ", 0), 0u) << *second;
  EXPECT_NE(rows[1].find(" new"), std::string::npos) << rows[1];
  EXPECT_EQ(rows[2].rfind("  0x20 ", 0), 0u) << *second;
  EXPECT_NE(rows[2].find(" 0 B"), std::string::npos) << rows[2];
  EXPECT_NE(second->find("sites by growth"), std::string::npos) << *second;
  EXPECT_NE(second->find("(+4.9 KiB since the view started)"), std::string::npos) << *second;

  // l sorts by live bytes again; q quits, wherever it is among the keys.
  EXPECT_FALSE(view.Keys("l", 1));
  EXPECT_EQ(view.sort(), LiveView::Sort::kLiveBytes);
  EXPECT_TRUE(view.Keys("xgq", 3));
}

TEST(LiveViewTest, RefusesRepliesThatAreNotSnapshots) {
  LiveView view("x.sock", 0);
  EXPECT_EQ(view.Render("not json").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(view.Render("{\"totals\":{}}").status().code(), absl::StatusCode::kDataLoss);
  // Sites without their fields.
  std::string reply = Reply({{"0x10", "req", 1}});
  reply.replace(reply.find("\"addr\":\"0x10\""), 13, "\"addr\":\"zz\"");
  EXPECT_EQ(view.Render(reply).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace memtrace::cli_internal
