#!/bin/bash
# `make dist`: a self-contained release of Hesper's tools, as llama.cpp's
# release archives are -- one tarball that runs on an x86-64 Linux machine
# with only the C library and a GPU driver (CUDA's libcuda, or a Vulkan
# loader and ICD); no LLVM, MLIR, libstdc++ or anything else installed.
#
#   bash scripts/dist.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR is a build configured with -DHESPER_STATIC_LLVM=ON (the
# Makefile's build-dist): its tools link LLVM's and MLIR's static libraries,
# libstdc++ and libgcc statically (cmake/HesperStaticLLVM.cmake). This
# script copies them stripped into hesper-VERSION-linux-x86_64/, with the
# model writer and the NumPy reference (share/hesper/gguf) and the licenses
# of what is linked in; checks that no binary needs a shared library beyond
# the C library's (the check fails the build, naming the binary and the
# library); runs the release from its own folder, in an environment that
# names no build folder, on a model it writes and against the build's own
# hesper-run (the same tokens); and writes OUT_DIR/hesper-VERSION-linux-x86_64.tar.gz.
#
# Left out: hesper-server (it links Debian's cpp-httplib, a shared library
# with OpenSSL and Brotli behind it) and MLIR's runner utilities and async
# runtime for gpu dialect programs (libmlir_runner_utils.so and
# libmlir_async_runtime.so need libLLVM.so): hesper-run prints memrefs and
# vectors with its own stand-ins then, and a program that uses
# async.execute runs where MLIR is installed. The CPU target links its
# kernels with the system's C compiler driver (cc), which a machine that
# runs the CPU target must have; the CUDA target finds libdevice under
# /usr/local/cuda or $CUDA_HOME as the build does.
set -euo pipefail
build=${1:?usage: dist.sh BUILD_DIR OUT_DIR}
out=${2:?usage: dist.sh BUILD_DIR OUT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-/usr/bin/python3}

tools=(hesper-run hesper-opt hesper-eval hesper-tune hesper-train
       hesper-bundle-run)
compiler=libexec/hesper/hesper-run-compiler
for t in "${tools[@]/#/bin/}" "$compiler"; do
  [[ -x $build/$t ]] || { echo "dist.sh: $build/$t is missing (build it first)" >&2; exit 1; }
done

version=$(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown)
name=hesper-$version-linux-x86_64
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin" "$root/libexec/hesper" "$root/share/hesper/gguf" \
         "$root/share/doc/hesper/licenses"
for t in "${tools[@]}"; do
  strip -o "$root/bin/$t" "$build/bin/$t"
done
strip -o "$root/$compiler" "$build/$compiler"
cp "$here"/utils/gguf/{make_model.py,reference.py,compare_logits.py} \
   "$root/share/hesper/gguf/"
# The licenses of what the binaries contain (Debian's copyright files of
# LLVM and MLIR, which list them), beside a note of what this is.
for pkg in libllvm22 libmlir-22; do
  [[ -f /usr/share/doc/$pkg/copyright ]] &&
    cp /usr/share/doc/$pkg/copyright "$root/share/doc/hesper/licenses/$pkg"
done
cat > "$root/README" <<EOF
Hesper $version for x86-64 Linux: tools linked statically against LLVM,
MLIR, libstdc++ and libgcc. They need the C library (glibc 2.34 or later)
and, for a GPU, its driver: libcuda.so.1 (NVIDIA) or a Vulkan loader and
ICD. The CPU target also needs a C compiler driver (cc) to link kernels.

  bin/hesper-run model.gguf -p "Once upon a time" -n 64
  bin/hesper-run model.gguf --backend=cuda -f prompt.txt --kernel-times
  bin/hesper-eval --backend=cuda --quick
  python3 share/hesper/gguf/make_model.py tiny.gguf --preset demo  # NumPy

Documentation: the project's README.md and docs/.
EOF

# Only the C library's own shared objects may be needed.
allowed='^(libc|libm|libdl|librt|libpthread)\.so\.[0-9]+$|^ld-linux-x86-64\.so\.2$'
bad=0
for f in "$root"/bin/* "$root/$compiler"; do
  for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    if ! [[ $lib =~ $allowed ]]; then
      echo "dist.sh: ${f#"$root"/} needs $lib, which a bare machine lacks" >&2
      bad=1
    fi
  done
done
(( bad == 0 )) || exit 1

# The release runs from its own folder: a model it writes, decoded on the
# CPU target (no build folder, no LLVM on the library path, its own program
# cache), gives the build's tokens.
check=$stage/check
mkdir -p "$check"
"$python" "$root/share/hesper/gguf/make_model.py" "$check/m.gguf" \
  --arch llama --seed 7 --type q8_0 --quiet
run=(--backend=cpu --tokens 1,2,3,4,5 -n 8 --temp 0 --print-token-ids)
want=$("$build/bin/hesper-run" "$check/m.gguf" "${run[@]}" --no-cache 2>/dev/null)
got=$(env -i PATH=/usr/bin:/bin HOME="$check" HESPER_CACHE_DIR="$check/cache" \
      "$root/bin/hesper-run" "$check/m.gguf" "${run[@]}" 2>"$check/err") || {
  echo "dist.sh: the release's hesper-run failed:" >&2
  cat "$check/err" >&2
  exit 1
}
if [[ $got != "$want" ]]; then
  echo "dist.sh: the release's tokens differ from the build's:" >&2
  echo "  release: $got" >&2
  echo "  build:   $want" >&2
  exit 1
fi
rm -rf "$check"

mkdir -p "$out"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "dist.sh: $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1)):" \
     "${tools[*]} and hesper-run-compiler; each needs only the C library"
