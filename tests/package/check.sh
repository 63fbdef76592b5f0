#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the library component of a built tree into a fresh prefix and builds an
# embedder's programs against it twice: through find_package(rusk CONFIG) and through a
# plain `pkg-config --cflags --libs rusk`. Also checks what an installed static archive
# must not hold (LTO bytecode) and that the shared library carries a versioned SONAME.
# Usage: check.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" --component library >/dev/null
test ! -e "$prefix/bin/rusk" || { echo "FAIL: the library component installed the tool"; exit 1; }
pc=$(find "$prefix" -name rusk.pc)
cfg=$(find "$prefix" -name ruskConfig.cmake)
test -n "$pc" -a -n "$cfg" || { echo "FAIL: rusk.pc or ruskConfig.cmake not installed"; exit 1; }

for a in $(find "$prefix" -name 'librusk.a'); do
	if objdump -h "$a" | grep -q '\.gnu\.lto_'; then
		echo "FAIL: $a holds LTO bytecode"
		exit 1
	fi
done
for so in $(find "$prefix" -name 'librusk.so.*.*.*'); do
	soname=$(objdump -p "$so" | awk '/SONAME/ {print $2}')
	case $soname in librusk.so.[0-9]*.[0-9]*) ;; *) echo "FAIL: $so has SONAME '$soname'"; exit 1 ;; esac
done

# 1. CMake: find_package(rusk CONFIG), rusk::rusk, C and C++.
cmake -S "$src/tests/package" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH="$(dirname "$pc")/..":${LD_LIBRARY_PATH:-} "$work/cmake/consumer"
LD_LIBRARY_PATH="$(dirname "$pc")/..":${LD_LIBRARY_PATH:-} "$work/cmake/consumer_cc"

# 2. pkg-config, as a Makefile would use it.
export PKG_CONFIG_PATH=$(dirname "$pc")
cc -std=c11 -o "$work/consumer_pc" "$src/tests/package/consumer.c" $(pkg-config --cflags --libs rusk)
LD_LIBRARY_PATH="$(dirname "$pc")/..":${LD_LIBRARY_PATH:-} "$work/consumer_pc"
echo "package ok: $(pkg-config --modversion rusk) via find_package and pkg-config"
