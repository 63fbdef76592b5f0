#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the library component of a built tree into a fresh prefix and builds an
# embedder's programs against it: through find_package(rusk CONFIG) (the static and the
# shared library), through a plain `pkg-config --cflags --libs rusk` (the shared one) and
# fully static through `pkg-config --libs --static rusk`. Each program calls every public
# header and checks whose malloc it got (jemalloc's only where the static librusk built
# with jemalloc is linked). Also checks what an installed static archive must not hold (LTO
# bytecode), that the shared library carries a versioned SONAME, that rusk.pc gives
# consumers no flags of rusk's dependencies, and that the TSan suppressions are installed.
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
test -f "$prefix/share/rusk/tsan.supp" || { echo "FAIL: share/rusk/tsan.supp not installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")

test -n "$(find "$prefix" -name 'librusk.a')" || { echo "FAIL: no librusk.a installed"; exit 1; }
for a in $(find "$prefix" -name 'librusk.a'); do
	if objdump -h "$a" | grep -q '\.gnu\.lto_'; then
		echo "FAIL: $a holds LTO bytecode"
		exit 1
	fi
done
test -n "$(find "$prefix" -name 'librusk.so.*.*.*')" || { echo "FAIL: no librusk.so installed"; exit 1; }
for so in $(find "$prefix" -name 'librusk.so.*.*.*'); do
	soname=$(objdump -p "$so" | awk '/SONAME/ {print $2}')
	case $soname in librusk.so.[0-9]*.[0-9]*) ;; *) echo "FAIL: $so has SONAME '$soname'"; exit 1 ;; esac
done

export PKG_CONFIG_PATH=$(dirname "$pc")
cflags=$(pkg-config --cflags rusk)
case " $cflags " in
*" -D"* | *x86_64-linux-gnu*) echo "FAIL: rusk.pc gives consumers its dependencies' flags: $cflags"; exit 1 ;;
esac
# The static librusk built with jemalloc makes it the process's malloc (rusk.h).
if pkg-config --libs --static rusk | grep -q -- '-ljemalloc'; then static_malloc=jemalloc; else static_malloc=libc; fi
run() { LD_LIBRARY_PATH="$libdir":${LD_LIBRARY_PATH:-} "$@"; }

# 1. CMake: find_package(rusk CONFIG); rusk::rusk and the other kind, C and C++.
cmake -S "$src/tests/package" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
run "$work/cmake/consumer_static" $static_malloc
if readelf -d "$work/cmake/consumer_static" | grep -q 'NEEDED.*librusk'; then
	echo "FAIL: consumer_static needs librusk.so"
	exit 1
fi
run "$work/cmake/consumer_shared" libc
readelf -d "$work/cmake/consumer_shared" | grep -q 'NEEDED.*librusk\.so' ||
	{ echo "FAIL: consumer_shared does not load librusk.so"; exit 1; }
run "$work/cmake/consumer_cc"

# 2. pkg-config, as a Makefile would use it: -lrusk links the shared library.
cc -std=c11 -o "$work/consumer_pc" "$src/tests/package/consumer.c" $(pkg-config --cflags --libs rusk)
run "$work/consumer_pc" libc

# 3. Fully static: every library in Libs.private, as archives.
if ! cc -static -std=c11 -o "$work/consumer_static_pc" "$src/tests/package/consumer.c" \
	$(pkg-config --cflags --libs --static rusk) >"$work/static_link.log" 2>&1; then
	cat "$work/static_link.log"
	echo "FAIL: cc -static with \`pkg-config --libs --static rusk\` did not link"
	exit 1
fi
"$work/consumer_static_pc" $static_malloc
echo "package ok: $(pkg-config --modversion rusk) via find_package (static, shared), pkg-config (shared) and pkg-config --static (cc -static)"
