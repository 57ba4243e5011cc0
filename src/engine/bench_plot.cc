#include "engine/bench_plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>

#include <fmt/format.h>

#include "core/check.h"
#include "io/png_writer.h"

namespace taco {
namespace {

constexpr int kWidth = 640, kHeight = 400;
constexpr int kLeft = 70, kRight = 24, kTop = 36, kBottom = 44;  // plot area margins
constexpr uint32_t kInk = 0x000000, kGrid = 0xdddddd, kLine = 0x1f5fbf;

// A 5x7 font for the characters the chart writes ('#': ink).
const std::map<char, std::array<const char*, 7>>& font() {
    static const std::map<char, std::array<const char*, 7>> glyphs = {
        {'0', {" ### ", "#   #", "#  ##", "# # #", "##  #", "#   #", " ### "}},
        {'1', {"  #  ", " ##  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "}},
        {'2', {" ### ", "#   #", "    #", "   # ", "  #  ", " #   ", "#####"}},
        {'3', {"#####", "   # ", "  #  ", "   # ", "    #", "#   #", " ### "}},
        {'4', {"   # ", "  ## ", " # # ", "#  # ", "#####", "   # ", "   # "}},
        {'5', {"#####", "#    ", "#### ", "    #", "    #", "#   #", " ### "}},
        {'6', {"  ## ", " #   ", "#    ", "#### ", "#   #", "#   #", " ### "}},
        {'7', {"#####", "    #", "   # ", "  #  ", " #   ", " #   ", " #   "}},
        {'8', {" ### ", "#   #", "#   #", " ### ", "#   #", "#   #", " ### "}},
        {'9', {" ### ", "#   #", "#   #", " ####", "    #", "   # ", " ##  "}},
        {'a', {"     ", "     ", " ### ", "    #", " ####", "#   #", " ####"}},
        {'b', {"#    ", "#    ", "# ## ", "##  #", "#   #", "#   #", "#### "}},
        {'c', {"     ", "     ", " ### ", "#    ", "#    ", "#   #", " ### "}},
        {'d', {"    #", "    #", " ## #", "#  ##", "#   #", "#   #", " ####"}},
        {'e', {"     ", "     ", " ### ", "#   #", "#####", "#    ", " ### "}},
        {'h', {"#    ", "#    ", "# ## ", "##  #", "#   #", "#   #", "#   #"}},
        {'i', {"  #  ", "     ", " ##  ", "  #  ", "  #  ", "  #  ", " ### "}},
        {'k', {"#    ", "#    ", "#  # ", "# #  ", "##   ", "# #  ", "#  # "}},
        {'o', {"     ", "     ", " ### ", "#   #", "#   #", "#   #", " ### "}},
        {'s', {"     ", "     ", " ####", "#    ", " ### ", "    #", "#### "}},
        {'t', {" #   ", " #   ", "###  ", " #   ", " #   ", " #  #", "  ## "}},
        {'y', {"     ", "     ", "#   #", "#   #", " ####", "    #", " ### "}},
        {'z', {"     ", "     ", "#####", "   # ", "  #  ", " #   ", "#####"}},
        {'/', {"     ", "    #", "   # ", "  #  ", " #   ", "#    ", "     "}},
        {' ', {"     ", "     ", "     ", "     ", "     ", "     ", "     "}},
    };
    return glyphs;
}

int text_width(const std::string& s) { return int(s.size()) * 6 - 1; }

// Text with its top-left corner at (x, y); characters the font lacks are left blank.
void draw_text(io::RgbImage& img, int x, int y, const std::string& s, uint32_t rgb) {
    for (char ch : s) {
        auto it = font().find(ch);
        if (it != font().end())
            for (int r = 0; r < 7; ++r)
                for (int c = 0; c < 5; ++c)
                    if (it->second[size_t(r)][c] == '#') img.set(x + c, y + r, rgb);
        x += 6;
    }
}

// A line `thickness` pixels wide (squares along the segment).
void draw_line(io::RgbImage& img, double x0, double y0, double x1, double y1, uint32_t rgb, int thickness) {
    const int steps = std::max(1, int(std::ceil(std::max(std::abs(x1 - x0), std::abs(y1 - y0)))));
    for (int i = 0; i <= steps; ++i) {
        const double f = double(i) / steps;
        const int x = int(std::lround(x0 + (x1 - x0) * f)), y = int(std::lround(y0 + (y1 - y0) * f));
        for (int dy = 0; dy < thickness; ++dy)
            for (int dx = 0; dx < thickness; ++dx) img.set(x + dx - thickness / 2, y + dy - thickness / 2, rgb);
    }
}

// The smallest of 1, 2, 5 x 10^k at or above v (v > 0).
double round_up(double v) {
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= v) return m * p;
    return 10 * p;
}

}  // namespace

std::string batch_chart_png(const std::vector<BatchPoint>& points) {
    TACO_CHECK_MSG(!points.empty(), "batch_chart_png: no points");
    double x_lo = INFINITY, x_hi = 0, y_hi = 0;
    for (const BatchPoint& p : points) {
        TACO_CHECK_MSG(p.batch_size > 0 && std::isfinite(p.tokens_per_s), "batch_chart_png: a point ({}, {})",
                       p.batch_size, p.tokens_per_s);
        x_lo = std::min(x_lo, std::log2(p.batch_size));
        x_hi = std::max(x_hi, std::log2(p.batch_size));
        y_hi = std::max(y_hi, p.tokens_per_s);
    }
    if (x_hi == x_lo) x_lo -= 1, x_hi += 1;  // one batch size: in the middle
    y_hi = y_hi > 0 ? round_up(y_hi * 1.05) : 1;
    io::RgbImage img(kWidth, kHeight);
    const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
    auto px = [&](double batch) { return kLeft + (std::log2(batch) - x_lo) / (x_hi - x_lo) * plot_w; };
    auto py = [&](double tps) { return kTop + plot_h - tps / y_hi * plot_h; };
    // Horizontal grid and tok/s labels at fifths of the maximum.
    for (int i = 0; i <= 5; ++i) {
        const double v = y_hi * i / 5;
        const int y = int(std::lround(py(v)));
        if (i > 0) draw_line(img, kLeft, y, kWidth - kRight, y, kGrid, 1);
        const std::string label = fmt::format("{}", std::lround(v));
        draw_text(img, kLeft - 8 - text_width(label), y - 3, label, kInk);
    }
    // Axes.
    draw_line(img, kLeft, kTop, kLeft, kTop + plot_h, kInk, 1);
    draw_line(img, kLeft, kTop + plot_h, kWidth - kRight, kTop + plot_h, kInk, 1);
    // The points in batch order, joined, each with its batch size under the axis.
    std::vector<BatchPoint> sorted = points;
    std::sort(sorted.begin(), sorted.end(),
              [](const BatchPoint& a, const BatchPoint& b) { return a.batch_size < b.batch_size; });
    for (size_t i = 0; i + 1 < sorted.size(); ++i)
        draw_line(img, px(sorted[i].batch_size), py(sorted[i].tokens_per_s), px(sorted[i + 1].batch_size),
                  py(sorted[i + 1].tokens_per_s), kLine, 2);
    for (const BatchPoint& p : sorted) {
        const int x = int(std::lround(px(p.batch_size))), y = int(std::lround(py(p.tokens_per_s)));
        for (int dy = -3; dy <= 3; ++dy)
            for (int dx = -3; dx <= 3; ++dx) img.set(x + dx, y + dy, kLine);
        draw_line(img, x, kTop + plot_h, x, kTop + plot_h + 4, kInk, 1);
        const std::string label = fmt::format("{}", std::lround(p.batch_size));
        draw_text(img, x - text_width(label) / 2, int(kTop + plot_h) + 8, label, kInk);
    }
    const std::string title = "decode tok/s by batch size";
    draw_text(img, (kWidth - text_width(title)) / 2, 12, title, kInk);
    const std::string x_title = "batch size";
    draw_text(img, (kWidth - text_width(x_title)) / 2, kHeight - 14, x_title, kInk);
    return io::encode_png(img);
}

}  // namespace taco
