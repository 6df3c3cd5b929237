# `make dist`: the tools linked against LLVM's static component libraries
# instead of libLLVM.so, so that they run where no LLVM is installed.
#
# Debian's LLVM is built with LLVM_LINK_LLVM_DYLIB: its MLIR libraries (all
# static) and ours name the shared `LLVM` target, which brings libLLVM.so
# and through it libz3, libxml2, libedit and ICU. The static component
# libraries (libLLVM*.a) are installed beside it. hesper_link_llvm_statically()
# replaces `LLVM` in every target's link interface -- the imported MLIR
# libraries' and Hesper's own -- with one link group of those components'
# archives (the linker scans it until nothing more resolves, so their order
# does not matter), then zlib and zstd from their static archives. The
# components' own interfaces are left out: they name libz3.so (only LLVM's
# constraint solver, which nothing here calls, uses it), libedit, libxml2
# and Polly. scripts/dist.sh checks what the binaries still need.

# Components that cannot be part of a tool: other programs' libraries
# (BOLT, Exegesis, TableGen's), and the two that bring shared libraries.
set(HESPER_LLVM_STATIC_EXCLUDE
  "^LLVM(BOLT|Exegesis|TableGen|FuzzerCLI|FuzzMutate|LineEditor|WindowsManifest|WindowsDriver|LibDriver|DlltoolDriver|Debuginfod|OptDriver|CFIVerify|Diff)")

function(hesper_replace_llvm target property replacement)
  get_target_property(links ${target} ${property})
  if(NOT links)
    return()
  endif()
  list(FIND links LLVM at)
  if(at EQUAL -1)
    return()
  endif()
  list(TRANSFORM links REPLACE "^LLVM$" "${replacement}")
  set_property(TARGET ${target} PROPERTY ${property} "${links}")
endfunction()

# Every target defined under `dir`, recursively, into `out`.
function(hesper_targets_under dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    hesper_targets_under(${sub} more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(hesper_link_llvm_statically)
  # The components' archives, as files: their imported targets' own link
  # interfaces (libz3.so, Polly, LibEdit) stay out of the link.
  set(archives)
  foreach(lib ${LLVM_AVAILABLE_LIBS})
    if(NOT TARGET ${lib} OR NOT lib MATCHES "^LLVM[A-Za-z]" OR
       lib MATCHES "${HESPER_LLVM_STATIC_EXCLUDE}")
      continue()
    endif()
    get_target_property(type ${lib} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")
      list(APPEND archives "$<TARGET_FILE:${lib}>")
    endif()
  endforeach()
  find_library(HESPER_ZLIB_STATIC NAMES libz.a REQUIRED)
  find_library(HESPER_ZSTD_STATIC NAMES libzstd.a REQUIRED)
  add_library(HesperLLVMStatic INTERFACE)
  target_link_libraries(HesperLLVMStatic INTERFACE
    -Wl,--start-group ${archives} -Wl,--end-group
    ${HESPER_ZLIB_STATIC} ${HESPER_ZSTD_STATIC} rt dl m pthread
    -Wl,--as-needed)
  foreach(lib ${MLIR_EXPORTED_TARGETS})
    if(TARGET ${lib})
      hesper_replace_llvm(${lib} INTERFACE_LINK_LIBRARIES HesperLLVMStatic)
    endif()
  endforeach()
  hesper_targets_under(${PROJECT_SOURCE_DIR} ours)
  foreach(target ${ours})
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      hesper_replace_llvm(${target} LINK_LIBRARIES HesperLLVMStatic)
    endif()
    hesper_replace_llvm(${target} INTERFACE_LINK_LIBRARIES HesperLLVMStatic)
  endforeach()
endfunction()
