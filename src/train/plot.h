#pragma once
// Training curves as SVG: the training and validation loss against steps, and validation BLEU,
// drawn from the metrics log (transformer plot RUN).
#include <string>

#include "train/metrics.h"

namespace tfm {

// Writes the picture atomically; returns false (writing nothing) if the log has no records, or none
// with a value to draw.
bool write_training_plot(const MetricsLog& metrics, const std::string& svg_path);

}  // namespace tfm
