// A fixture with a fresh scratch folder per test (named after the suite, the test and the process, so parallel
// CTest entries never share one), and a helper that writes raw bytes into it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace taco::testing_util {

class ScratchDirTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = std::filesystem::path(::testing::TempDir()) /
               (std::string("taco_") + info->test_suite_name() + "_" + info->name() + "_" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    // Writes `bytes` to dir_/name and returns the path.
    std::string write(const std::string& name, const std::string& bytes) {
        std::string path = (dir_ / name).string();
        std::ofstream out(path, std::ios::binary);
        out.write(bytes.data(), std::streamsize(bytes.size()));
        return path;
    }

    std::filesystem::path dir_;
};

}  // namespace taco::testing_util
