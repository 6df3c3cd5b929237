# The layers of Hesper's libraries, lowest first (docs/Architecture.md has
# the same table; utils/check-layering.py checks the #includes). A library
# may link libraries of its own layer and of the layers below it; the
# runtime only from the execution layer up, and the runtime links none of
# the compiler's libraries. hesper_check_layering() stops the configure
# step at the first library that breaks the rule.
set(HESPER_LAYERS
  "exp:1:HesperExpDialect"
  "shaderm:2:HesperShaderMDialect,HesperShaderMTransforms"
  "circuit:3:HesperCircuitDialect,HesperCircuitBuilder,HesperCircuitTransforms"
  "conversion:4:HesperExpToStd,HesperCircuitToShaderM,HesperShaderMToGPU"
  "interpreter:4:HesperInterpreter"
  "pipelines:5:HesperPipelines"
  "target:6:HesperTarget"
  "registration:7:HesperRegistration"
  "execution:8:HesperExecution,HesperDeviceSelect"
  "models:9:HesperModels,HesperModelRuntime"
  "tuning:10:HesperTuner,HesperEvalReport"
  "serving:10:HesperServing"
  "tools:11:HesperToolSupport,HesperCrashWatchdog")
set(HESPER_RUNTIME_USERS_FROM 8)
# Libraries of those layers that link nothing of the compiler (no MLIR,
# no LLVM library of their own): hesper-run's front end is built from them
# and the runtime alone (docs/Models.md, "Starting without the compiler").
set(HESPER_COMPILER_FREE HesperDeviceSelect HesperModelRuntime)

# The libraries `lib` links, its own and its interface's, into `out`.
function(hesper_links_of lib out)
  get_target_property(links ${lib} LINK_LIBRARIES)
  get_target_property(interface_links ${lib} INTERFACE_LINK_LIBRARIES)
  if(NOT links)
    set(links)
  endif()
  if(interface_links)
    list(APPEND links ${interface_links})
  endif()
  set(${out} ${links} PARENT_SCOPE)
endfunction()

function(hesper_check_layering)
  set(all)
  foreach(entry ${HESPER_LAYERS})
    string(REPLACE ":" ";" parts "${entry}")
    list(GET parts 0 layer)
    list(GET parts 1 rank)
    list(GET parts 2 libs)
    string(REPLACE "," ";" libs "${libs}")
    foreach(lib ${libs})
      set(layer_of_${lib} ${layer})
      set(rank_of_${lib} ${rank})
      list(APPEND all ${lib})
    endforeach()
  endforeach()

  foreach(lib ${all})
    if(NOT TARGET ${lib})
      message(FATAL_ERROR "layering: ${lib} is in HESPER_LAYERS "
                          "(cmake/HesperLayering.cmake) but not a target")
    endif()
    hesper_links_of(${lib} links)
    foreach(dep ${links})
      if(dep STREQUAL "HesperRuntime")
        if(rank_of_${lib} LESS HESPER_RUNTIME_USERS_FROM)
          message(FATAL_ERROR "layering: ${lib} (layer "
            "'${layer_of_${lib}}') links HesperRuntime; only the execution "
            "layer and above may")
        endif()
      elseif(DEFINED rank_of_${dep})
        if(rank_of_${dep} GREATER rank_of_${lib} OR
           (rank_of_${dep} EQUAL rank_of_${lib} AND
            NOT layer_of_${dep} STREQUAL layer_of_${lib}))
          message(FATAL_ERROR "layering: ${lib} (layer '${layer_of_${lib}}') "
            "links ${dep} (layer '${layer_of_${dep}}'), which is not below it")
        endif()
      elseif(dep MATCHES "^Hesper" AND NOT dep MATCHES "PassIncGen$|IncGen$")
        message(FATAL_ERROR "layering: ${lib} links ${dep}, which has no "
          "layer in HESPER_LAYERS (cmake/HesperLayering.cmake)")
      endif()
    endforeach()
  endforeach()

  foreach(lib ${HESPER_COMPILER_FREE})
    hesper_links_of(${lib} links)
    foreach(dep ${links})
      if(NOT dep STREQUAL "HesperRuntime" AND NOT dep MATCHES "^Hesper.*IncGen$")
        message(FATAL_ERROR "layering: ${lib} links ${dep}; it links "
          "only the runtime (HESPER_COMPILER_FREE)")
      endif()
    endforeach()
  endforeach()

  get_target_property(runtime_links HesperRuntime LINK_LIBRARIES)
  get_target_property(runtime_interface HesperRuntime INTERFACE_LINK_LIBRARIES)
  foreach(dep ${runtime_links} ${runtime_interface})
    if(dep MATCHES "^Hesper|^MLIR|^LLVM")
      message(FATAL_ERROR "layering: HesperRuntime links ${dep}; the "
        "runtime links no compiler, MLIR or LLVM library")
    endif()
  endforeach()
endfunction()
