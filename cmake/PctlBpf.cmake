# The eBPF thread-state backend (sensors/threadstate_bpf.c, sensors/bpf/threadstate.bpf.c):
# built when clang, bpftool, libbpf and the kernel's BTF are all here, with PCTL_HAVE_BPF
# defined; otherwise left out, and `pctl sensors` says the backend is not built.
# vmlinux.h comes from the build machine's BTF (CO-RE relocates the program on other kernels)
# and the skeleton (threadstate.skel.h) embeds the BPF object in pctlcore.
option(PCTL_BPF "Build the eBPF thread-state backend when its tools are here" ON)
set(PCTL_BPF_SOURCE ${CMAKE_SOURCE_DIR}/sensors/threadstate_bpf.c)
list(FILTER PCTL_CORE_SOURCES EXCLUDE REGEX "/sensors/threadstate_bpf\\.c$")

set(PCTL_HAVE_BPF OFF)
if(PCTL_BPF)
  find_program(BPF_CLANG NAMES clang clang-14)
  find_program(BPFTOOL bpftool PATHS /usr/sbin /sbin)
  pkg_check_modules(LIBBPF IMPORTED_TARGET libbpf>=1.0)
  set(PCTL_VMLINUX_BTF /sys/kernel/btf/vmlinux)
  set(missing "")
  if(NOT BPF_CLANG)
    list(APPEND missing "clang")
  endif()
  if(NOT BPFTOOL)
    list(APPEND missing "bpftool")
  endif()
  if(NOT LIBBPF_FOUND)
    list(APPEND missing "libbpf >= 1.0 (libbpf-dev)")
  endif()
  if(NOT EXISTS ${PCTL_VMLINUX_BTF})
    list(APPEND missing "kernel BTF (${PCTL_VMLINUX_BTF})")
  endif()
  if(missing)
    string(REPLACE ";" ", " missing "${missing}")
    message(STATUS "eBPF thread-state backend: not built, missing ${missing}")
  else()
    set(PCTL_HAVE_BPF ON)
    message(STATUS "eBPF thread-state backend: built (${BPF_CLANG}, ${BPFTOOL})")
  endif()
endif()

# Adds the backend to target (pctlcore) when it can be built.
function(pctl_bpf_attach target)
  if(NOT PCTL_HAVE_BPF)
    return()
  endif()
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|amd64|AMD64")
    set(arch x86)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
    set(arch arm64)
  else()
    message(FATAL_ERROR "eBPF thread-state backend: no syscall numbers for "
      "${CMAKE_SYSTEM_PROCESSOR}; configure with -DPCTL_BPF=OFF")
  endif()
  set(dir ${CMAKE_BINARY_DIR}/bpf)
  set(bpf_src ${CMAKE_SOURCE_DIR}/sensors/bpf/threadstate.bpf.c)
  add_custom_command(OUTPUT ${dir}/vmlinux.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${BPFTOOL} btf dump file ${PCTL_VMLINUX_BTF} format c > ${dir}/vmlinux.h.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${dir}/vmlinux.h.tmp ${dir}/vmlinux.h
    COMMENT "Generating vmlinux.h from ${PCTL_VMLINUX_BTF}" VERBATIM)
  # The host's include path is not the BPF target's: only libbpf's headers and ours.
  add_custom_command(OUTPUT ${dir}/threadstate.bpf.o
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_${arch} -Wall -Werror
      -I${dir} -I${CMAKE_SOURCE_DIR}/sensors/bpf -I${LIBBPF_INCLUDEDIR}
      -c ${bpf_src} -o ${dir}/threadstate.bpf.o
    DEPENDS ${bpf_src} ${CMAKE_SOURCE_DIR}/sensors/bpf/threadstate_maps.h ${dir}/vmlinux.h
    COMMENT "Compiling the BPF program threadstate.bpf.c" VERBATIM)
  add_custom_command(OUTPUT ${dir}/threadstate.skel.h
    COMMAND ${BPFTOOL} gen skeleton ${dir}/threadstate.bpf.o name threadstate_bpf
      > ${dir}/threadstate.skel.h.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${dir}/threadstate.skel.h.tmp ${dir}/threadstate.skel.h
    DEPENDS ${dir}/threadstate.bpf.o
    COMMENT "Generating the BPF skeleton threadstate.skel.h" VERBATIM)
  add_custom_target(pctl_bpf_skeleton DEPENDS ${dir}/threadstate.skel.h)
  target_sources(${target} PRIVATE ${PCTL_BPF_SOURCE})
  add_dependencies(${target} pctl_bpf_skeleton)
  target_include_directories(${target} PRIVATE ${dir} ${CMAKE_SOURCE_DIR}/sensors/bpf)
  target_compile_definitions(${target} PUBLIC PCTL_HAVE_BPF=1)
  target_link_libraries(${target} PUBLIC PkgConfig::LIBBPF)
endfunction()
