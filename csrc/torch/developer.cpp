// Torch adapter of the developer settings (ltx_kernels/common/dev_config.h).
#include <c10/util/Exception.h>

#include "ltx_kernels/common/dev_config.h"
#include "torch_binding.h"

bool set_developer_setting(c10::string_view name, c10::string_view value) {
  const std::string n(name.data(), name.size());
  const bool known = ltx_kernels::set_dev_setting(n, std::string(value.data(), value.size()));
  TORCH_CHECK(known, "set_developer_setting: unknown setting '", n, "' (docs/knobs.md lists them)");
  return known;
}

std::string developer_setting(c10::string_view name) {
  const std::string n(name.data(), name.size());
  bool known = false;
  for (const char* s : ltx_kernels::kDevSettings) known = known || n == s;
  TORCH_CHECK(known, "developer_setting: unknown setting '", n, "' (docs/knobs.md lists them)");
  return ltx_kernels::dev_setting(n.c_str());
}
