//===- Format.h - numbers for people ----------------------------*- C++ -*-===//
#ifndef TGC_SUPPORT_FORMAT_H
#define TGC_SUPPORT_FORMAT_H

#include <cstdint>
#include <string>

namespace tgc {

/// "83.69 MiB": bytes in binary units, two decimals.
std::string formatBytes(int64_t bytes);

/// 124439808 → "124,439,808".
std::string withCommas(int64_t n);

/// "1.25 G", "3.40 T"; below a million, withCommas.
std::string humanCount(int64_t n);

} // namespace tgc

#endif // TGC_SUPPORT_FORMAT_H
