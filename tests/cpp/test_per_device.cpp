// GoogleTest for common/per_device.h: the per-device "largest value applied" record that the
// launchers use to opt their kernels in to more than 48 KB of dynamic shared memory once per
// device and size (the attribute belongs to the device's context, so each GPU needs its own call).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "ltx_kernels/common/per_device.h"

using namespace ltx_kernels;

namespace {
// A fake attribute: records calls and the value each device holds; fails when asked to.
struct FakeAttr {
  std::vector<int> calls;
  int value[kMaxCudaDevices] = {};
  int fail_with = 0;
  int set(int device, int v) {
    calls.push_back(v);
    if (fail_with != 0) return fail_with;
    if (device >= 0 && device < kMaxCudaDevices) value[device] = v;
    return 0;
  }
};
}  // namespace

TEST(PerDeviceMax, OncePerDeviceAndSize) {
  PerDeviceMax limit;
  FakeAttr a;
  auto raise = [&](int dev, int v) { return limit.raise(dev, v, [&](int b) { return a.set(dev, b); }); };
  EXPECT_EQ(raise(0, 100 * 1024), 0);
  EXPECT_EQ(raise(0, 100 * 1024), 0);
  EXPECT_EQ(raise(0, 64 * 1024), 0);  // smaller: already covered, never lowers
  EXPECT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.value[0], 100 * 1024);
  // a second device needs its own call (the failure a process-wide "done" flag would cause)
  EXPECT_EQ(raise(1, 64 * 1024), 0);
  EXPECT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.value[1], 64 * 1024);
  EXPECT_EQ(limit.applied(1), 64 * 1024);
  // larger on device 1: raised there, device 0 untouched
  EXPECT_EQ(raise(1, 200 * 1024), 0);
  EXPECT_EQ(a.value[1], 200 * 1024);
  EXPECT_EQ(a.value[0], 100 * 1024);
  EXPECT_EQ(a.calls.size(), 3u);
}

TEST(PerDeviceMax, ErrorsAreReturnedAndNotRemembered) {
  PerDeviceMax limit;
  FakeAttr a;
  a.fail_with = 1;  // cudaErrorInvalidValue
  auto raise = [&](int dev, int v) { return limit.raise(dev, v, [&](int b) { return a.set(dev, b); }); };
  EXPECT_EQ(raise(0, 100 * 1024), 1);
  EXPECT_EQ(limit.applied(0), 0);
  a.fail_with = 0;
  EXPECT_EQ(raise(0, 100 * 1024), 0);  // tried again
  EXPECT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(limit.applied(0), 100 * 1024);
}

TEST(PerDeviceMax, DevicesOutsideTheCacheApplyEveryTime) {
  PerDeviceMax limit;
  FakeAttr a;
  for (int dev : {-1, kMaxCudaDevices, kMaxCudaDevices + 5}) {
    EXPECT_EQ(limit.raise(dev, 1000, [&](int b) { return a.set(dev, b); }), 0);
    EXPECT_EQ(limit.raise(dev, 1000, [&](int b) { return a.set(dev, b); }), 0);
    EXPECT_EQ(limit.applied(dev), 0);
  }
  EXPECT_EQ(a.calls.size(), 6u);
}

TEST(PerDeviceMax, ConcurrentRequestsNeverLowerTheSetting) {
  // Threads ask for different sizes on one device at once; every call that returns success must
  // find the (fake) attribute at least as large as its request afterwards, and the applied
  // values must only ever increase.
  for (int round = 0; round < 50; ++round) {
    PerDeviceMax limit;
    std::atomic<int> attr{0};
    std::atomic<int> lowered{0};
    std::atomic<int> short_after{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; ++t) {
      ts.emplace_back([&, t] {
        const int want = (48 + 16 * ((t * 5 + round) % 8)) * 1024;
        const int err = limit.raise(0, want, [&](int b) {
          if (b < attr.load()) lowered.fetch_add(1);
          attr.store(b);
          return 0;
        });
        if (err != 0 || attr.load() < want) short_after.fetch_add(1);
      });
    }
    for (auto& th : ts) th.join();
    EXPECT_EQ(lowered.load(), 0);
    EXPECT_EQ(short_after.load(), 0);
    EXPECT_EQ(limit.applied(0), attr.load());
  }
}
