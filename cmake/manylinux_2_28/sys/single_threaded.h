// manylinux_2_28 shim. glibc >= 2.32 ships <sys/single_threaded.h>, and libstdc++'s headers
// then read the glibc symbol __libc_single_threaded (GLIBC_2.32) to skip atomic reference
// counting. A manylinux_2_28 binary may not need that symbol, so this header, found first on
// the include path, declares a file-local stand-in that always says "several threads":
// libstdc++ then always uses atomics, exactly as it does on glibc < 2.32.
#pragma once
static const char __libc_single_threaded = 0;
