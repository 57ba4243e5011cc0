// The chart of `taco_llm bench batch --plot`: decode tok/s against batch size as a PNG (io/png_writer.h), batch sizes
// on a log2 axis, tok/s from 0 to a round maximum, each point marked and labelled on its axis.
#pragma once

#include <string>
#include <vector>

namespace taco {

struct BatchPoint {
    double batch_size = 0;  // > 0
    double tokens_per_s = 0;
};

// The PNG file's bytes (640 x 400). Aborts on no points or a batch size <= 0 (the bench gives neither).
std::string batch_chart_png(const std::vector<BatchPoint>& points);

}  // namespace taco
