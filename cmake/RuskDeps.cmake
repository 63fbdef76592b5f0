# SPDX-License-Identifier: MIT
# Finds rusk's dependencies (Debian 12 packages) with pkg-config or CMake. Missing ones
# stop configure with one line naming the packages and the command that installs them.
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
    set_property(GLOBAL APPEND PROPERTY RUSK_MISSING ${debpkg})
    return()
  endif()
  add_library(rusk::${target} ALIAS PkgConfig::_rusk_${target})
endfunction()

# The library's own; then what the tests and benchmarks need, only when they are built.
rusk_require_pkg(ck ck libck-dev)
rusk_require_pkg(urcu liburcu-memb liburcu-dev)
# Classification (core/learn/classify.c): the SVD comes from LAPACK through LAPACKE. Debian picks
# the LAPACK/BLAS behind liblapack.so.3; rusk installs OpenBLAS's serial build, because a
# threaded BLAS starts worker threads in every process that loads it (a scheduling agent's
# process included) and joins them at exit, which hung runs under a memory limit.
rusk_require_pkg(lapacke lapacke "liblapacke-dev libopenblas-serial-dev")
# 3σSched (core/learn/plan.c) solves its plans with GLPK's MILP solver. Debian ships no
# pkg-config module for it: the header and library are looked for directly, and the
# library is linked by name (-lglpk: no imported target, which an installed static librusk's
# CMake package would then have to define), so that a static librusk's users get it too.
find_path(RUSK_GLPK_INCLUDE glpk.h)
find_library(RUSK_GLPK_LIB glpk)
if(NOT RUSK_GLPK_INCLUDE OR NOT RUSK_GLPK_LIB)
  set_property(GLOBAL APPEND PROPERTY RUSK_MISSING libglpk-dev)
endif()
if(RUSK_WITH_JEMALLOC)
  rusk_require_pkg(jemalloc jemalloc libjemalloc-dev)
endif()
if(RUSK_BUILD_TESTS)
  rusk_require_pkg(cmocka cmocka libcmocka-dev)
endif()
if(RUSK_BUILD_BENCH)
  find_package(benchmark QUIET CONFIG)
  if(NOT benchmark_FOUND)
    set_property(GLOBAL APPEND PROPERTY RUSK_MISSING libbenchmark-dev)
  endif()
endif()

get_property(_rusk_missing GLOBAL PROPERTY RUSK_MISSING)
if(_rusk_missing)
  list(JOIN _rusk_missing " " _rusk_missing)
  message(FATAL_ERROR "rusk: missing ${_rusk_missing}: apt-get install -y ${_rusk_missing}")
endif()
