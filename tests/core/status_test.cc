#include "core/status.h"

#include <string>

#include <gtest/gtest.h>

namespace taco {
namespace {

Result<int> parse_positive(int v) {
    if (v <= 0) return error("value {} is not positive", v);
    return v;
}

TEST(Result, ValueOfAnOkResultIsTheValue) {
    Result<int> r = parse_positive(3);
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(r.value(), 3);
    EXPECT_EQ(*r, 3);
}

TEST(Result, ValueOfAnErrorAbortsWithItsMessage) {
    Result<int> r = parse_positive(-1);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), "value -1 is not positive");
    EXPECT_DEATH((void)r.value(), "Result holds an error, not a value: value -1 is not positive");
    EXPECT_DEATH((void)*r, "value -1 is not positive");
    Result<std::string> s = Status::error("no file");
    EXPECT_DEATH((void)s->size(), "no file");
}

TEST(Status, WithContextPrefixesOnlyErrors) {
    EXPECT_TRUE(Status::ok().with_context("ctx").is_ok());
    EXPECT_EQ(error("bad {}", 1).with_context("file").message(), "file: bad 1");
}

}  // namespace
}  // namespace taco
