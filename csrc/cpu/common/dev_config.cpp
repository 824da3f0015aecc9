// Developer settings (ltx_kernels/common/dev_config.h).
#include "ltx_kernels/common/dev_config.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ltx_kernels {
namespace {

constexpr int kCount = int(sizeof(kDevSettings) / sizeof(kDevSettings[0]));

struct Store {
  std::mutex mu;
  std::string values[kCount];
  Store() {
    for (int i = 0; i < kCount; ++i)
      if (const char* s = std::getenv(kDevSettings[i])) values[i] = s;
  }
};

Store& store() {
  static Store s;  // the environment, read once
  return s;
}

int index_of(const char* name) {
  for (int i = 0; i < kCount; ++i)
    if (std::strcmp(kDevSettings[i], name) == 0) return i;
  return -1;
}

}  // namespace

std::string dev_setting(const char* name) {
  const int i = index_of(name);
  if (i < 0) return std::string();
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.values[i];
}

bool set_dev_setting(const std::string& name, const std::string& value) {
  const int i = index_of(name.c_str());
  if (i < 0) return false;
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.values[i] = value;
  return true;
}

}  // namespace ltx_kernels
