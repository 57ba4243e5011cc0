// A bounded load test: a few hundred streams open at once through the real HTTP stack, none may fail.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "server/stream_load.h"
#include "test_client.h"

namespace taco::server::testing {
namespace {

TEST(ServerLoad, ThreeHundredConcurrentStreamsAllEndWithDoneAndFreeTheirKvBlocks) {
    TestServer s("models/demo");
    StreamLoadOptions load;
    load.port = s.port;
    load.model = "test-model";
    load.num_requests = 300;
    load.concurrency = 300;
    load.max_tokens = 4;
    load.request_timeout_s = 120;
    auto report = run_stream_load(load);
    ASSERT_TRUE(report.is_ok()) << report.status().message();
    EXPECT_EQ(report->num_failed, 0) << (report->errors.empty() ? "" : report->errors[0]);
    EXPECT_EQ(report->num_without_done, 0);
    EXPECT_EQ(report->num_ok, 300);
    EXPECT_EQ(report->max_open, 300);
    EXPECT_EQ(report->output_tokens, 300 * 4);
    for (int i = 0; i < 200 && (s.engine->stats().kv_cache_usage > 0 || s.server->num_in_flight() > 0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(s.server->num_in_flight(), 0);
    EXPECT_EQ(s.engine->stats().kv_cache_usage, 0.0);
}

TEST(ServerLoad, RefusedConnectionsAreCountedAsFailures) {
    StreamLoadOptions load;
    load.port = unused_loopback_port();
    load.num_requests = 3;
    load.concurrency = 2;
    auto report = run_stream_load(load);
    ASSERT_TRUE(report.is_ok()) << report.status().message();
    EXPECT_EQ(report->num_failed, 3);
    EXPECT_EQ(report->num_ok, 0);
    ASSERT_FALSE(report->errors.empty());
    EXPECT_NE(report->errors[0].find("connect"), std::string::npos) << report->errors[0];
}

}  // namespace
}  // namespace taco::server::testing
