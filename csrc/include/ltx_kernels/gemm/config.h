// The grammar of LTX_KERNELS_GEMM_CONFIG (a developer setting, common/dev_config.h; docs/knobs.md),
// which forces all or part of the sm_90a GEMM kernel's tile configuration: a pure function, no
// CUDA, no torch; unit-tested in tests/cpp/test_gemm_heuristics.cpp.
//
//   ""  or  "auto"                 nothing forced
//   "<bm>x<bn>"  or  "auto"        the tile (positive integers; whether it is compiled and fits is
//                                  the entry's question, gemm::why_not)
//   then any of, each once or more (the last wins), separated by ':':
//     c<1|2>     cluster size (2: two CTAs on adjacent M tiles share B through TMA multicast)
//     g<1..1024> M tiles per raster group
//     s<n>       persistent CTAs (n >= 1)
//     p<2..8>    at most this many pipeline stages
// e.g. "128x160:c2:g8", "auto:s66".
#pragma once

#include <string>

#include "ltx_kernels/gemm/gemm_params.h"

namespace ltx_kernels {
namespace gemm {

namespace config_detail {
// A decimal number of 1 to 9 digits (nothing else), or -1.
inline int parse_uint(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  int v = 0;
  for (const char ch : s) {
    if (ch < '0' || ch > '9') return -1;
    v = v * 10 + (ch - '0');
  }
  return v;
}
}  // namespace config_detail

// Parses `s` into *out (the fields it names; the rest stay 0, "the heuristic's value"). On a
// malformed value: false, *out untouched, and *error the sentence to raise, naming the setting,
// the rule broken and the value.
inline bool parse_tile_config(const std::string& s, TileConfig* out, std::string* error) {
  TileConfig c;
  auto bad = [&](const std::string& why) {
    if (error)
      *error = "LTX_KERNELS_GEMM_CONFIG must be 'auto' or '<bm>x<bn>', optionally followed by ':c<1|2>', "
               "':g<n>', ':s<n>', ':p<2..8>' (" + why + "; got '" + s + "')";
    return false;
  };
  if (s.empty()) {
    *out = c;
    return true;
  }
  size_t pos = s.find(':');
  const std::string tile = s.substr(0, pos);
  if (tile != "auto") {
    const size_t x = tile.find('x');
    if (x == std::string::npos) return bad("no tile");
    c.bm = config_detail::parse_uint(tile.substr(0, x));
    c.bn = config_detail::parse_uint(tile.substr(x + 1));
    if (c.bm < 0 || c.bn < 0) return bad("unreadable tile");
    if (c.bm == 0 || c.bn == 0) return bad("bad tile");
  }
  while (pos != std::string::npos) {
    const size_t next = s.find(':', pos + 1);
    const std::string f = s.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    if (f.size() < 2) return bad("empty field");
    const int v = config_detail::parse_uint(f.substr(1));
    if (v < 0) return bad("unreadable field '" + f + "'");
    if (f[0] == 'c' && (v == 1 || v == 2)) c.cluster = v;
    else if (f[0] == 'g' && v > 0 && v <= 1024) c.group_m = v;
    else if (f[0] == 's' && v > 0) c.sms = v;
    else if (f[0] == 'p' && v >= 2 && v <= 8) c.stages = v;
    else return bad("bad field '" + f + "'");
    pos = next;
  }
  *out = c;
  return true;
}

}  // namespace gemm
}  // namespace ltx_kernels
