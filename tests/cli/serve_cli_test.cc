// `taco_llm serve` argument errors (the server itself is tested in tests/server).
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace taco::testing_util {
namespace {

TEST(ServeCli, NoModelAndNoDemoModelIsAClearError) {
    CommandResult r = run_taco("serve", "", {{"TACO_LLM_DEMO_MODEL", "/nonexistent/demo"}});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("TACO_LLM_DEMO_MODEL=/nonexistent/demo"), std::string::npos) << r.err;
}

TEST(ServeCli, UnknownFlagIsAnErrorNamingIt) {
    CommandResult r = run_taco("serve models/demo --no-such-flag");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE((r.out + r.err).find("--no-such-flag"), std::string::npos) << r.out << r.err;
}

TEST(ServeCli, MissingModelFolderIsAnError) {
    CommandResult r = run_taco("serve /nonexistent/model/folder");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("/nonexistent/model/folder"), std::string::npos) << r.err;
}

TEST(ServeCli, FlagsThatCannotServeAreRefusedAtStartup) {
    for (const char* value : {"nan", "inf", "-1"}) {
        CommandResult r = run_taco(std::string("serve models/demo --port 0 --kv-cache-gb ") + value);
        EXPECT_EQ(r.exit_code, 1) << value;
        EXPECT_NE(r.err.find("--kv-cache-gb must be a non-negative number"), std::string::npos) << value << r.err;
    }
    for (const char* value : {"0", "-3"}) {
        CommandResult r = run_taco(std::string("serve models/demo --port 0 --max-pending-requests ") + value);
        EXPECT_EQ(r.exit_code, 1) << value;
        EXPECT_NE(r.err.find("--max-pending-requests must be at least 1"), std::string::npos) << value << r.err;
    }
    CommandResult r = run_taco("serve models/demo --port 0 --shutdown-timeout nan");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--shutdown-timeout must be in [0, 86400]"), std::string::npos) << r.err;
    // One of several keys empty: a bare "Bearer " would pass.
    CommandResult empty_key = run_taco("serve models/demo --port 0 --api-key good --api-key ''");
    EXPECT_EQ(empty_key.exit_code, 1);
    EXPECT_NE(empty_key.err.find("--api-key: an empty key"), std::string::npos) << empty_key.err;
    // One key per flag: a second word is an error naming it, never a second key or a swallowed model argument.
    CommandResult two_words = run_taco("serve models/demo --port 0 --api-key good other");
    EXPECT_NE(two_words.exit_code, 0);
    EXPECT_NE(two_words.err.find("other"), std::string::npos) << two_words.err;
    CommandResult key_first = run_taco("serve --api-key good /nonexistent/model/folder");
    EXPECT_EQ(key_first.exit_code, 1);
    EXPECT_NE(key_first.err.find("/nonexistent/model/folder"), std::string::npos) << key_first.err;
}

}  // namespace
}  // namespace taco::testing_util
