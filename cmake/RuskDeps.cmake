# SPDX-License-Identifier: MIT
# Finds rusk's dependencies (Debian 12 packages) with pkg-config. A missing one stops
# configure with one line naming the package and the command that installs it.
find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "rusk: pkg-config not found: apt-get install -y pkg-config")
endif()
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

# rusk_require_pkg(<target> <pkg-config module> <debian package>)
function(rusk_require_pkg target module debpkg)
  pkg_check_modules(_rusk_${target} QUIET IMPORTED_TARGET GLOBAL ${module})
  if(NOT _rusk_${target}_FOUND)
    message(FATAL_ERROR "rusk: missing ${debpkg} (pkg-config '${module}'): apt-get install -y ${debpkg}")
  endif()
  add_library(rusk::${target} ALIAS PkgConfig::_rusk_${target})
endfunction()

rusk_require_pkg(ck ck libck-dev)
rusk_require_pkg(urcu liburcu-memb liburcu-dev)
rusk_require_pkg(jemalloc jemalloc libjemalloc-dev)
rusk_require_pkg(cmocka cmocka libcmocka-dev)

find_package(benchmark QUIET CONFIG)
if(NOT benchmark_FOUND)
  message(FATAL_ERROR "rusk: missing libbenchmark-dev (CMake package 'benchmark'): apt-get install -y libbenchmark-dev")
endif()
