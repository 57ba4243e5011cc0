// engine/bench_plot.h: the chart is a 640 x 400 PNG whose points land where the axes say (batch sizes on a log2 axis,
// tok/s from 0 up), whatever order the runs came in.
#include "engine/bench_plot.h"

#include <gtest/gtest.h>

#include <string>

namespace taco {
namespace {

uint32_t be32(const std::string& s, size_t at) {
    return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 | uint32_t(uint8_t(s[at + 2])) << 8 |
           uint8_t(s[at + 3]);
}

// The pixel (x, y) of encode_png's output (one IDAT of stored blocks; io/png_writer_test reads them in full).
uint32_t pixel(const std::string& png, int x, int y) {
    const int width = int(be32(png, 16));
    const size_t idat = 8 + 12 + 13 + 8;  // signature, IHDR chunk, IDAT length and type
    const size_t offset = size_t(y) * size_t(width * 3 + 1) + 1 + size_t(x) * 3;
    // Stored blocks of 65535 bytes: 5 header bytes before each.
    const size_t at = idat + 2 + (offset / 65535 + 1) * 5 + offset;
    return uint32_t(uint8_t(png[at])) << 16 | uint32_t(uint8_t(png[at + 1])) << 8 | uint8_t(png[at + 2]);
}

TEST(BenchPlot, PointsLandWhereTheAxesSay) {
    const std::string png = batch_chart_png({{8, 900}, {1, 150}, {64, 2000}, {2, 290}});
    ASSERT_GT(png.size(), 640u * 400u * 3u);
    EXPECT_EQ(be32(png, 16), 640u);
    EXPECT_EQ(be32(png, 20), 400u);
    // Plot area x in [70, 616], y in [36, 356]; x = log2(batch) over [0, 6]; y from 0 to 5000 (2000 * 1.05 = 2100
    // rounded up to 1, 2 or 5 x 10^k). The marker centres:
    const auto x_of = [](double log2_batch) { return int(70 + log2_batch / 6.0 * 546 + 0.5); };
    const auto y_of = [](double tps) { return int(36 + 320 - tps / 5000.0 * 320 + 0.5); };
    const uint32_t line = 0x1f5fbf;
    EXPECT_EQ(pixel(png, x_of(0), y_of(150)), line);
    EXPECT_EQ(pixel(png, x_of(1), y_of(290)), line);
    EXPECT_EQ(pixel(png, x_of(3), y_of(900)), line);
    EXPECT_EQ(pixel(png, x_of(6), y_of(2000)), line);
    EXPECT_EQ(pixel(png, 10, 390), 0xffffffu);  // the background
    EXPECT_EQ(pixel(png, 70, 200), 0u);         // the y axis
}

TEST(BenchPlot, OneBatchSizeIsDrawnInTheMiddle) {
    const std::string png = batch_chart_png({{4, 100}});
    EXPECT_EQ(pixel(png, 70 + 273, int(36 + 320 - 100.0 / 200 * 320 + 0.5)), 0x1f5fbfu);
}

}  // namespace
}  // namespace taco
