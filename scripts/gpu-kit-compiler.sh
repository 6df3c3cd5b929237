#!/bin/bash
# Adds hesper-run's compiler tool to the GPU kit that ../shared/gpu/pack.sh
# wrote (.gpu/payload.tar.xz). That script packs build/bin/hesper-* and the
# shared libraries `build/bin/hesper-run` needs; hesper-run is now a front
# end that links no LLVM (docs/Models.md, "Starting without the compiler"),
# so the kit also needs libexec/hesper/hesper-run-compiler and the libraries
# it loads (libLLVM and its own dependencies, which every other tool needs
# too). Run from the project's root right after pack.sh:
#
#   bash ../shared/gpu/pack.sh && bash scripts/gpu-kit-compiler.sh
set -euo pipefail
kit=.gpu/payload.tar.xz
tool=build/libexec/hesper/hesper-run-compiler
[[ -f $kit ]] || { echo "gpu-kit-compiler.sh: no $kit; run ../shared/gpu/pack.sh first" >&2; exit 1; }
[[ -x $tool ]] || { echo "gpu-kit-compiler.sh: no $tool; run make build first" >&2; exit 1; }
st=$(mktemp -d); trap 'rm -rf "$st"' EXIT
xz -dc "$kit" | tar -C "$st" -xf -
mkdir -p "$st/root/build/libexec/hesper"
strip -o "$st/root/$tool" "$tool"
# The same libraries pack.sh takes from a tool that links libLLVM.
for l in $(ldd "$tool" | awk '/=>/ {print $3}'); do
  case $(basename "$l") in
    libLLVM*|libedit*|libffi*|libbsd*|libmd*|libtinfo*) cp -L "$l" "$st/hlib/" ;;
  esac
done
tar -C "$st" -cf - ROOT root hlib llvm-bin lit | xz -6 -T2 > "$kit.new"
mv "$kit.new" "$kit"
echo "gpu-kit-compiler.sh: $kit $(du -h "$kit" | cut -f1), with $tool and libLLVM"
