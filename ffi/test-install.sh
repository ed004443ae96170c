#!/usr/bin/env bash
# libkubeboot as a user gets it: `make -C ffi install` into a temporary prefix, then consumers
# built only from the installed tree — a C program through pkg-config (shared and static) and
# through CMake's find_package(kubeboot) (shared and static), and a separate Go module that
# imports the binding (kubeboot.dev/go/kubeboot) through a `replace` line, its static library
# found by pkg-config. Each runs; the shared ones need libkubeboot.so.<ABI> (the SONAME), the
# static ones no libkubeboot at all.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "test-install: FAIL: $*" >&2; exit 1; }
ok() { echo "test-install: ok: $*"; }

make -s -C "$ROOT/ffi" install PREFIX="$prefix" >/dev/null
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/ffi/Cargo.toml" | head -n1)
lib=$prefix/lib
soname=$(readelf -d "$lib/libkubeboot.so.$version" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $soname == libkubeboot.so.0.* || $soname == libkubeboot.so.[1-9]* ]] || fail "SONAME '$soname'"
[[ $(readlink "$lib/$soname") == "libkubeboot.so.$version" && $(readlink "$lib/libkubeboot.so") == "$soname" ]] ||
  fail "links: $(ls -l "$lib" | tr '\n' ' ')"
for f in libkubeboot.a pkgconfig/kubeboot.pc pkgconfig/kubeboot-static.pc cmake/kubeboot/kubebootConfig.cmake \
  cmake/kubeboot/kubebootConfigVersion.cmake; do
  [[ -f $lib/$f ]] || fail "$f not installed"
done
[[ -f $prefix/include/kubeboot.h ]] || fail "kubeboot.h not installed"
ok "installed: libkubeboot.so.$version (SONAME $soname, links), libkubeboot.a, kubeboot.h, .pc, CMake package"

mkdir -p "$tmp/app"
cat >"$tmp/app/app.c" <<'EOF'
/* A consumer of the installed libkubeboot: parse a token, print what the library says. */
#include <kubeboot.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    const char *t = "abcdef.0123456789abcdef";
    kubeboot_token *tok = NULL;
    if (kubeboot_token_parse(t, strlen(t), &tok) != KUBEBOOT_RESULT_OK) return 1;
    char name[64];
    size_t n = 0;
    if (kubeboot_token_secret_name(tok, name, sizeof name, &n) != KUBEBOOT_RESULT_OK) return 1;
    kubeboot_token_free(tok);
    printf("%s %.*s\n", kubeboot_version(), (int)n, name);
    return kubeboot_token_parse("bad", 3, &tok) == KUBEBOOT_RESULT_INVALID_TOKEN ? 0 : 1;
}
EOF
want="$version bootstrap-token-abcdef"
check_app() { # binary shared|static
  local out
  out=$("$1") || fail "$1 exited $?"
  [[ $out == "$want" ]] || fail "$1 printed '$out', want '$want'"
  if [[ $2 == shared ]]; then
    readelf -d "$1" | grep -q "NEEDED.*\[$soname\]" || fail "$1 does not need $soname"
  else
    ! readelf -d "$1" | grep -q "NEEDED.*libkubeboot" || fail "$1 needs libkubeboot"
  fi
  ok "${1#"$tmp"/}: runs, prints '$out', $2"
}

export PKG_CONFIG_PATH=$lib/pkgconfig
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$tmp/app/pc-shared" "$tmp/app/app.c" $(pkg-config --cflags --libs kubeboot) -Wl,-rpath,"$lib"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$tmp/app/pc-static" "$tmp/app/app.c" $(pkg-config --cflags --libs kubeboot-static)
check_app "$tmp/app/pc-shared" shared
check_app "$tmp/app/pc-static" static

cat >"$tmp/app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(kubeboot_consumer C)
find_package(kubeboot 0.4 REQUIRED)
add_executable(cmake-shared app.c)
target_link_libraries(cmake-shared PRIVATE kubeboot::kubeboot)
add_executable(cmake-static app.c)
target_link_libraries(cmake-static PRIVATE kubeboot::kubeboot_static)
EOF
cmake -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "cmake configure"; }
cmake --build "$tmp/app/build" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake build"; }
check_app "$tmp/app/build/cmake-shared" shared
check_app "$tmp/app/build/cmake-static" static
# KUBEBOOT_USE_STATIC makes kubeboot::kubeboot the static library.
cmake -S "$tmp/app" -B "$tmp/app/build-static" -DCMAKE_PREFIX_PATH="$prefix" -DKUBEBOOT_USE_STATIC=ON \
  >>"$tmp/cmake.log" 2>&1 && cmake --build "$tmp/app/build-static" --target cmake-shared >>"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "cmake KUBEBOOT_USE_STATIC"; }
check_app "$tmp/app/build-static/cmake-shared" static
# A version this one is not compatible with is refused (0.x: the minor must match): the ABI
# before this one (0.3: the engine's and store's functions, the flat action struct) and after.
for other in 0.3 0.5; do
  sed "s/find_package(kubeboot 0.4 REQUIRED)/find_package(kubeboot $other REQUIRED)/" \
    "$tmp/app/CMakeLists.txt" >"$tmp/app/CMakeLists.$other"
  mkdir -p "$tmp/app-$other" && cp "$tmp/app/"*.c "$tmp/app-$other/" 2>/dev/null || true
  cp "$tmp/app/CMakeLists.$other" "$tmp/app-$other/CMakeLists.txt"
  if cmake -S "$tmp/app-$other" -B "$tmp/app-$other/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake-$other.log" 2>&1; then
    fail "find_package(kubeboot $other) accepted $version"
  fi
  grep -q "compatible with requested version \"$other\"" "$tmp/cmake-$other.log" || { cat "$tmp/cmake-$other.log"; fail "no version message"; }
  ok "find_package(kubeboot $other) refuses $version"
done
# A version this one is not compatible with is refused (0.x: the minor must match).


# The Go binding from another module: its import path, a replace line, pkg-config for the library.
mkdir -p "$tmp/goconsumer"
cat >"$tmp/goconsumer/go.mod" <<EOF
module example.com/consumer

go 1.22

require kubeboot.dev/go v0.0.0

replace kubeboot.dev/go => $ROOT/examples/go-agent
EOF
cat >"$tmp/goconsumer/main.go" <<'EOF'
package main

import (
	"fmt"
	"os"

	"kubeboot.dev/go/kubeboot"
)

func main() {
	t, err := kubeboot.ParseToken("abcdef.0123456789abcdef")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer t.Close()
	fmt.Println(kubeboot.Version(), t.SecretName())
}
EOF
(cd "$tmp/goconsumer" && GOFLAGS=-mod=mod "$GO" build -o consumer . ) || fail "go build of the consumer module"
check_app "$tmp/goconsumer/consumer" static
