// The run-wide resource facility: one object per key, made on first use, the same object for
// every later request, destroyed in reverse order of creation; a key asked for with another type
// is a bug; a failing factory leaves nothing behind.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "infrabench/run_resources.h"

using infrabench::run_resources;

namespace {

struct logged {
  std::vector<std::string>* log;
  std::string name;
  logged(std::vector<std::string>* l, std::string n) : log(l), name(std::move(n)) {}
  logged(const logged&) = delete;
  ~logged() { log->push_back(name); }
};

}  // namespace

TEST(RunResources, MadeOnceAndShared) {
  run_resources res;
  int made = 0;
  auto make = [&] {
    ++made;
    return 42;
  };
  int& a = res.get<int>("n", make);
  int& b = res.get<int>("n", make);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(a, 42);
  EXPECT_EQ(made, 1);
  a = 7;
  EXPECT_EQ(res.get<int>("n", make), 7);
  EXPECT_EQ(res.size(), 1u);
}

TEST(RunResources, DestroyedInReverseOrderOfCreation) {
  std::vector<std::string> log;
  {
    run_resources res;
    (void)res.get<logged>("first", [&] { return std::make_unique<logged>(&log, "first"); });
    // Made while making another: the inner one is complete first, so it is destroyed last.
    (void)res.get<logged>("outer", [&] {
      (void)res.get<logged>("inner", [&] { return std::make_unique<logged>(&log, "inner"); });
      return std::make_unique<logged>(&log, "outer");
    });
    EXPECT_TRUE(log.empty());
  }
  EXPECT_EQ(log, (std::vector<std::string>{"outer", "inner", "first"}));
}

TEST(RunResources, ClearEmptiesAndAllowsANewObject) {
  std::vector<std::string> log;
  run_resources res;
  (void)res.get<logged>("x", [&] { return std::make_unique<logged>(&log, "x1"); });
  res.clear();
  EXPECT_EQ(log, std::vector<std::string>{"x1"});
  EXPECT_EQ(res.size(), 0u);
  (void)res.get<logged>("x", [&] { return std::make_unique<logged>(&log, "x2"); });
  EXPECT_EQ(res.size(), 1u);
}

TEST(RunResources, AnotherTypeForAKeyIsABug) {
  run_resources res;
  (void)res.get<int>("k", [] { return 1; });
  EXPECT_THROW((void)res.get<double>("k", [] { return 1.0; }), std::logic_error);
  EXPECT_THROW((void)res.get<std::string>("null", [] { return std::unique_ptr<std::string>(); }),
               std::logic_error);
}

TEST(RunResources, AFailingFactoryLeavesNothing) {
  run_resources res;
  EXPECT_THROW((void)res.get<int>("k", []() -> int { throw std::runtime_error("no device"); }),
               std::runtime_error);
  EXPECT_EQ(res.size(), 0u);
  EXPECT_EQ(res.get<int>("k", [] { return 3; }), 3);  // the next request tries again
}
