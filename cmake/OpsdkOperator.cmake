# OpsdkOperator.cmake: build opsdk operator kernels from your own CMake project.
#
#   cmake_minimum_required(VERSION 3.18)
#   project(my_kernels LANGUAGES CXX)
#   list(APPEND CMAKE_MODULE_PATH "/path/to/opsdk/cmake")   # `opsdk cmake-dir` prints it
#   include(OpsdkOperator)
#   opsdk_add_operator(my_op FOLDER operators/my_op)
#
# opsdk_add_operator(<target>
#     [FOLDER <dir>]                  operator folder: its *.cpp/*.cc/*.cxx are compiled and
#                                     it is on the include path
#     [SOURCES <file>...]             more (or, without FOLDER, all) kernel sources
#     [OUTPUT_DIRECTORY <dir>]        where the module is written (default: the binary dir
#                                     of the target, in a subfolder named <target>)
#     [INSTALL_DESTINATION <dir>]     install(TARGETS) destination (e.g. inside a wheel)
#     [PORTABLE]                      flags for binaries that run on other hosts (see below)
#     [CPU_BASELINE <arch>]           -march value: native, x86-64, x86-64-v2, armv8-a, ...
#     [ISA_VARIANTS <level>...]       also build the module for these wider CPU levels
#                                     (x86-64-v3, x86-64-v4), each into _isa/<level>/ of
#                                     the output and install folders (see below)
#     [ENTRY_OBJECTS <file>...])      link these prebuilt objects of the entry point and
#                                     runtime (see opsdk_add_entry) instead of compiling them
#
# opsdk_add_entry(<target> [PORTABLE] [CPU_BASELINE <arch>]) compiles the entry point and
# the runtime alone as an OBJECT library; `opsdk build` (the JIT cache) uses it once per
# toolchain and links the objects into every operator with ENTRY_OBJECTS. `opsdk build` and `opsdk package`
# both build through this file: there is one description of how a kernel module is made.
#
# The result is a pybind11 module named `_opsdk_kernels` (the name opsdk's runtime loads)
# made of the kernel sources plus opsdk's generic entry point (opsdk/csrc/entry.cpp) and
# its Python-free runtime (opsdk/csrc/runtime.cpp: thread pool, invocation core), which are
# compiled once per project and shared by every operator target. Load it with
# opsdk.runtime.load_module(path), or put it next to the operator's spec.py, where opsdk
# picks it up as a prebuilt kernel.
#
# PORTABLE (used by `opsdk package`): CPU_BASELINE defaults to x86-64-v2 (x86_64) or
# armv8-a (aarch64) instead of the compiler's default or native; libstdc++ and libgcc are
# linked statically and their symbols hidden, so the module needs only the C library; the
# module is stripped; and source/build paths are mapped to fixed names so that the same
# sources give the same bytes wherever they are built.
#
# ISA_VARIANTS: the same module compiled again with the instructions of a wider level on
# top of the baseline (x86-64-v3: AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE; x86-64-v4: also
# AVX-512 F/BW/CD/DQ/VL), as feature flags, so that a compiler fixed to one CPU (zig's
# -mcpu) needs no other toolchain. In a wheel made by `opsdk package` (whose manifest lists
# the variants) opsdk's loader imports the best variant the CPU has (OPSDK_ISA=<level>
# forces one; see docs/packaging.md); elsewhere load the one you want with load_module.
#
# Variables (set before include() to override):
#   OPSDK_INCLUDE_DIR         folder holding opsdk/custom_op.h
#   OPSDK_ENTRY_SOURCE        opsdk's entry.cpp
#   OPSDK_RUNTIME_SOURCE      opsdk's runtime.cpp (default: next to entry.cpp)
# The first two are found next to this file (a source checkout or an installed opsdk), else by
# asking the Python interpreter for `opsdk._paths`.
#   OPSDK_PYTHON_INCLUDE_DIR  the headers of the Python the modules are for
#   OPSDK_PYTHON_EXT_SUFFIX   its module suffix, e.g. .cpython-311-aarch64-linux-gnu.so
# Give both for a cross build or another Python version (with a CMake toolchain file for
# the target); else they are asked of the Python interpreter FindPython finds.

include_guard(GLOBAL)

if(CMAKE_VERSION VERSION_LESS 3.18)
  message(FATAL_ERROR "OpsdkOperator.cmake needs CMake >= 3.18 (this is ${CMAKE_VERSION}); "
                      "pip install -U cmake")
endif()
get_property(_opsdk_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
if(NOT "CXX" IN_LIST _opsdk_languages)
  message(FATAL_ERROR "include(OpsdkOperator) after project(<name> LANGUAGES CXX)")
endif()

set(_OPSDK_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

# ------------------------------------------------------------------- Python + pybind11
# A module needs the headers of the Python it is for and that Python's file suffix
# (.cpython-311-aarch64-linux-gnu.so). Both are given for cross builds and for another
# Python than the one running CMake (OPSDK_PYTHON_INCLUDE_DIR, OPSDK_PYTHON_EXT_SUFFIX: what
# `opsdk package --platform/--python` and `opsdk build` pass), else asked of the interpreter
# FindPython finds. pybind11 is used for its headers only (PYBIND11_NOPYTHON), so it never
# looks for a Python of its own.
if(NOT OPSDK_PYTHON_INCLUDE_DIR OR NOT OPSDK_PYTHON_EXT_SUFFIX)
  find_package(Python 3.10 COMPONENTS Interpreter Development.Module REQUIRED)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
            "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"
    OUTPUT_VARIABLE _opsdk_suffix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _opsdk_rc)
  if(NOT _opsdk_rc EQUAL 0 OR NOT _opsdk_suffix)
    message(FATAL_ERROR "opsdk: ${Python_EXECUTABLE} did not tell its EXT_SUFFIX; set "
                        "OPSDK_PYTHON_EXT_SUFFIX (e.g. .cpython-311-x86_64-linux-gnu.so)")
  endif()
  set(OPSDK_PYTHON_INCLUDE_DIR "${Python_INCLUDE_DIRS}" CACHE STRING "Python headers")
  set(OPSDK_PYTHON_EXT_SUFFIX "${_opsdk_suffix}" CACHE STRING "Python module file suffix")
endif()
# The Python that runs helpers (never the one the module is for, in a cross build).
if(Python_EXECUTABLE)
  set(_OPSDK_PYTHON "${Python_EXECUTABLE}")
else()
  find_program(_OPSDK_PYTHON NAMES python3 python REQUIRED)
endif()
if(NOT TARGET pybind11::headers)
  set(PYBIND11_NOPYTHON ON)
  find_package(pybind11 CONFIG QUIET)
  if(NOT pybind11_FOUND)
    execute_process(
      COMMAND "${_OPSDK_PYTHON}" -m pybind11 --cmakedir
      OUTPUT_VARIABLE _opsdk_pybind11_dir
      OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _opsdk_rc)
    if(NOT _opsdk_rc EQUAL 0)
      message(FATAL_ERROR "opsdk: pybind11 not found (asked ${_OPSDK_PYTHON}); "
                          "pip install pybind11 or set pybind11_DIR")
    endif()
    find_package(pybind11 CONFIG REQUIRED HINTS "${_opsdk_pybind11_dir}")
  endif()
endif()

# ------------------------------------------------------------------- opsdk C++ API
function(_opsdk_locate_api)
  if(OPSDK_INCLUDE_DIR AND OPSDK_ENTRY_SOURCE)
    return()
  endif()
  # A checkout (<root>/cmake next to <root>/opsdk) or an install (opsdk/_data/cmake).
  foreach(pkg IN ITEMS "${_OPSDK_CMAKE_DIR}/../opsdk" "${_OPSDK_CMAKE_DIR}/../..")
    get_filename_component(pkg "${pkg}" ABSOLUTE)
    if(EXISTS "${pkg}/include/opsdk/custom_op.h" AND EXISTS "${pkg}/csrc/entry.cpp")
      set(OPSDK_INCLUDE_DIR "${pkg}/include" CACHE PATH "folder holding opsdk/custom_op.h")
      set(OPSDK_ENTRY_SOURCE "${pkg}/csrc/entry.cpp" CACHE FILEPATH "opsdk's entry.cpp")
      return()
    endif()
  endforeach()
  execute_process(
    COMMAND "${_OPSDK_PYTHON}" -c
            "import opsdk._paths as p; print(p.include_dir()); print(p.entry_source())"
    OUTPUT_VARIABLE _out
    OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "opsdk: cannot find the opsdk C++ API (custom_op.h, entry.cpp) next "
                        "to ${_OPSDK_CMAKE_DIR} nor through ${_OPSDK_PYTHON}; pip install "
                        "opsdk or set OPSDK_INCLUDE_DIR and OPSDK_ENTRY_SOURCE")
  endif()
  string(REPLACE "\n" ";" _out "${_out}")
  list(GET _out 0 _inc)
  list(GET _out 1 _entry)
  set(OPSDK_INCLUDE_DIR "${_inc}" CACHE PATH "folder holding opsdk/custom_op.h")
  set(OPSDK_ENTRY_SOURCE "${_entry}" CACHE FILEPATH "opsdk's entry.cpp")
endfunction()
_opsdk_locate_api()
if(NOT OPSDK_RUNTIME_SOURCE)
  get_filename_component(_opsdk_csrc "${OPSDK_ENTRY_SOURCE}" DIRECTORY)
  set(OPSDK_RUNTIME_SOURCE "${_opsdk_csrc}/runtime.cpp")
endif()
foreach(_f IN ITEMS "${OPSDK_INCLUDE_DIR}/opsdk/custom_op.h" "${OPSDK_ENTRY_SOURCE}"
                    "${OPSDK_RUNTIME_SOURCE}")
  if(NOT EXISTS "${_f}")
    message(FATAL_ERROR "opsdk: ${_f} does not exist; check OPSDK_INCLUDE_DIR and "
                        "OPSDK_ENTRY_SOURCE")
  endif()
endforeach()

include(CheckCXXCompilerFlag)
include(CheckLinkerFlag)

# Default CPU baseline of PORTABLE builds, per architecture.
function(_opsdk_default_baseline out)
  string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" proc)
  if(proc MATCHES "^(x86_64|amd64)$")
    set(${out} "x86-64-v2" PARENT_SCOPE)
  elseif(proc MATCHES "^(aarch64|arm64)$")
    set(${out} "armv8-a" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# Compile and link options of one flavour (portable or not, CPU baseline); cached by name.
function(_opsdk_flags portable baseline out_compile out_link)
  set(copts "")
  set(lopts "")
  # A toolchain whose compiler already targets one CPU level (opsdk package's zig wrappers:
  # `zig c++ -mcpu=x86_64_v2`) says so; another level would need another toolchain.
  if(OPSDK_TOOLCHAIN_CPU_BASELINE)
    if(baseline AND NOT baseline STREQUAL OPSDK_TOOLCHAIN_CPU_BASELINE)
      message(FATAL_ERROR "opsdk: the toolchain ${CMAKE_TOOLCHAIN_FILE} compiles for CPU "
                          "baseline ${OPSDK_TOOLCHAIN_CPU_BASELINE}, not ${baseline}")
    endif()
    set(baseline "")
  endif()
  if(baseline)
    string(MAKE_C_IDENTIFIER "OPSDK_HAS_MARCH_${baseline}" var)
    check_cxx_compiler_flag("-march=${baseline}" ${var})
    if(NOT ${var})
      message(FATAL_ERROR "opsdk: the compiler ${CMAKE_CXX_COMPILER} does not accept "
                          "-march=${baseline}; choose another CPU_BASELINE")
    endif()
    list(APPEND copts "-march=${baseline}")
    if(NOT baseline STREQUAL "native")
      list(APPEND copts "-mtune=generic")
    endif()
  endif()
  if(portable)
    check_cxx_compiler_flag("-ffile-prefix-map=/a=b" OPSDK_HAS_FILE_PREFIX_MAP)
    if(OPSDK_HAS_FILE_PREFIX_MAP)
      list(APPEND copts "-ffile-prefix-map=${CMAKE_SOURCE_DIR}=."
                        "-ffile-prefix-map=${CMAKE_BINARY_DIR}=build"
                        "-ffile-prefix-map=${OPSDK_INCLUDE_DIR}=opsdk-include")
    endif()
    # A toolchain may name its own (zig links libc++ statically anyway and has no
    # --exclude-libs); else every flag the linker takes of these.
    if(DEFINED OPSDK_TOOLCHAIN_PORTABLE_LINK_OPTIONS)
      set(candidates ${OPSDK_TOOLCHAIN_PORTABLE_LINK_OPTIONS})
    else()
      set(candidates "-static-libstdc++" "-static-libgcc" "LINKER:--exclude-libs,ALL"
                     "LINKER:--strip-all")
    endif()
    foreach(flag IN LISTS candidates)
      string(MAKE_C_IDENTIFIER "OPSDK_HAS_LINK_${flag}" var)
      check_linker_flag(CXX "${flag}" ${var})
      if(${var})
        list(APPEND lopts "${flag}")
      endif()
    endforeach()
  endif()
  set(${out_compile} "${copts}" PARENT_SCOPE)
  set(${out_link} "${lopts}" PARENT_SCOPE)
endfunction()

# The entry point and the runtime as an OBJECT library, compiled once per flavour and shared.
function(_opsdk_entry_target flavour copts out)
  set(name "opsdk_entry_${flavour}")
  if(NOT TARGET ${name})
    _opsdk_entry_library(${name} "${copts}")
  endif()
  set(${out} ${name} PARENT_SCOPE)
endfunction()

function(_opsdk_entry_library name copts)
  add_library(${name} OBJECT "${OPSDK_ENTRY_SOURCE}" "${OPSDK_RUNTIME_SOURCE}")
  _opsdk_python_target(${name} "${copts}")
endfunction()

# What every object of a Python module needs: C++17, PIC, hidden symbols, the opsdk API,
# pybind11's and Python's headers, and the flavour's flags.
function(_opsdk_python_target name copts)
  target_include_directories(${name} PRIVATE "${OPSDK_INCLUDE_DIR}")
  target_include_directories(${name} SYSTEM PRIVATE ${OPSDK_PYTHON_INCLUDE_DIR})
  target_link_libraries(${name} PRIVATE pybind11::headers)
  target_compile_options(${name} PRIVATE ${copts})
  set_target_properties(${name} PROPERTIES
    CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()

# Options shared by opsdk_add_operator and opsdk_add_entry -> compile and link flags.
macro(_opsdk_flavour)
  set(baseline "${ARG_CPU_BASELINE}")
  if(NOT baseline AND ARG_PORTABLE)
    _opsdk_default_baseline(baseline)
  endif()
  if(ARG_PORTABLE)
    set(portable ON)
  else()
    set(portable OFF)
  endif()
  _opsdk_flags(${portable} "${baseline}" copts lopts)
  string(MAKE_C_IDENTIFIER "${portable}_${baseline}" flavour)
endmacro()

# The compiler flags that add a wider x86-64 level's instructions to any baseline.
function(_opsdk_isa_flags level out)
  set(v3 -mavx -mavx2 -mbmi -mbmi2 -mf16c -mfma -mlzcnt -mmovbe -mxsave)
  if(level STREQUAL "x86-64-v3")
    set(flags ${v3})
  elseif(level STREQUAL "x86-64-v4")
    set(flags ${v3} -mavx512f -mavx512bw -mavx512cd -mavx512dq -mavx512vl)
  else()
    message(FATAL_ERROR "opsdk: ISA_VARIANTS ${level}: known variants are x86-64-v3 and "
                        "x86-64-v4")
  endif()
  string(MAKE_C_IDENTIFIER "OPSDK_HAS_ISA_${level}" var)
  check_cxx_compiler_flag("${flags}" ${var})
  if(NOT ${var})
    message(FATAL_ERROR "opsdk: the compiler ${CMAKE_CXX_COMPILER} does not accept the "
                        "${level} flags (${flags}); leave ${level} out of ISA_VARIANTS")
  endif()
  set(${out} ${flags} PARENT_SCOPE)
endfunction()

# opsdk_add_entry(<target> [PORTABLE] [CPU_BASELINE <arch>]): the entry point and runtime
# alone, as an OBJECT library, for builds that compile them once and link them into many
# operators (`opsdk build` keeps them per toolchain in its cache; see ENTRY_OBJECTS below).
function(opsdk_add_entry target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "PORTABLE" "CPU_BASELINE" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "opsdk_add_entry(${target}): unknown arguments "
                        "${ARG_UNPARSED_ARGUMENTS}")
  endif()
  _opsdk_flavour()
  _opsdk_entry_library(${target} "${copts}")
endfunction()

function(opsdk_add_operator target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "PORTABLE"
    "FOLDER;OUTPUT_DIRECTORY;INSTALL_DESTINATION;CPU_BASELINE" "SOURCES;ENTRY_OBJECTS;ISA_VARIANTS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "opsdk_add_operator(${target}): unknown arguments "
                        "${ARG_UNPARSED_ARGUMENTS}")
  endif()
  set(sources "")
  set(includes "")
  if(ARG_FOLDER)
    get_filename_component(folder "${ARG_FOLDER}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${folder}/spec.py")
      message(FATAL_ERROR "opsdk_add_operator(${target}): ${folder} is not an operator "
                          "folder (no spec.py); create one with `opsdk new`")
    endif()
    file(GLOB sources CONFIGURE_DEPENDS "${folder}/*.cpp" "${folder}/*.cc" "${folder}/*.cxx")
    list(SORT sources)
    list(APPEND includes "${folder}")
  endif()
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND sources "${src}")
    if(NOT ARG_FOLDER)
      get_filename_component(dir "${src}" DIRECTORY)
      list(APPEND includes "${dir}")
    endif()
  endforeach()
  if(NOT sources)
    message(FATAL_ERROR "opsdk_add_operator(${target}): no C++ sources; give FOLDER "
                        "(holding kernel.cpp) or SOURCES")
  endif()
  list(REMOVE_DUPLICATES includes)

  _opsdk_flavour()
  if(ARG_OUTPUT_DIRECTORY)
    get_filename_component(outdir "${ARG_OUTPUT_DIRECTORY}" ABSOLUTE
                           BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    set(outdir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  endif()
  _opsdk_module(${target} "${copts}" "${flavour}" "${outdir}" "${ARG_INSTALL_DESTINATION}"
                "${ARG_ENTRY_OBJECTS}")
  foreach(level IN LISTS ARG_ISA_VARIANTS)
    if(ARG_ENTRY_OBJECTS)
      message(FATAL_ERROR "opsdk_add_operator(${target}): ISA_VARIANTS and ENTRY_OBJECTS "
                          "exclude each other (the entry objects are of one CPU level)")
    endif()
    _opsdk_isa_flags(${level} isa)
    string(MAKE_C_IDENTIFIER "${level}" id)
    set(dest "")
    if(ARG_INSTALL_DESTINATION)
      set(dest "${ARG_INSTALL_DESTINATION}/_isa/${level}")
    endif()
    _opsdk_module(${target}_${id} "${copts};${isa}" "${flavour}_${id}" "${outdir}/_isa/${level}"
                  "${dest}" "")
  endforeach()
endfunction()

# One _opsdk_kernels module of an operator, of one flavour (flags), from the caller's
# sources, includes and link options.
function(_opsdk_module target copts flavour outdir dest entry_objects)
  add_library(${target} MODULE ${sources})
  _opsdk_python_target(${target} "${copts}")
  if(entry_objects)
    foreach(obj IN LISTS entry_objects)
      if(NOT EXISTS "${obj}")
        message(FATAL_ERROR "opsdk_add_operator(${target}): ENTRY_OBJECTS: ${obj} does not "
                            "exist; build it with opsdk_add_entry")
      endif()
    endforeach()
    target_sources(${target} PRIVATE ${entry_objects})
  else()
    _opsdk_entry_target(${flavour} "${copts}" entry)
    target_link_libraries(${target} PRIVATE ${entry})
  endif()
  target_include_directories(${target} PRIVATE ${includes})
  target_link_options(${target} PRIVATE ${lopts})
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")  # exit() in a kernel names it (entry.cpp)
    target_link_options(${target} PRIVATE "LINKER:--wrap=exit,--wrap=_exit,--wrap=_Exit")
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME _opsdk_kernels SUFFIX "${OPSDK_PYTHON_EXT_SUFFIX}"
    LIBRARY_OUTPUT_DIRECTORY "${outdir}")
  foreach(cfg IN ITEMS DEBUG RELEASE RELWITHDEBINFO MINSIZEREL)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY_${cfg} "${outdir}")
  endforeach()
  if(dest)
    install(TARGETS ${target} LIBRARY DESTINATION "${dest}")
  endif()
endfunction()
