# Install rules: `cmake --install build --prefix /usr` (DESTDIR= stages it), used by debian/.
#
# Binaries, man pages and the completion follow the prefix. The configuration goes to /etc/pctl
# whatever the prefix: that is where pctld, pctl and the unit look (PCTL_SYSCONFDIR).
# The unit and tmpfiles directories are systemd's own (pkg-config), since only those are read.
include(GNUInstallDirs)

set(PCTL_INSTALL_CONFDIR "/etc/pctl")

pkg_get_variable(PCTL_PC_UNITDIR systemd systemdsystemunitdir)
if(NOT PCTL_PC_UNITDIR)
  set(PCTL_PC_UNITDIR "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endif()
set(PCTL_SYSTEMD_UNITDIR "${PCTL_PC_UNITDIR}" CACHE PATH "Where pctld.service is installed")

pkg_get_variable(PCTL_PC_COMPLETIONSDIR bash-completion completionsdir)
if(NOT PCTL_PC_COMPLETIONSDIR)
  set(PCTL_PC_COMPLETIONSDIR "${CMAKE_INSTALL_FULL_DATADIR}/bash-completion/completions")
endif()
set(PCTL_BASH_COMPLETIONSDIR "${PCTL_PC_COMPLETIONSDIR}" CACHE PATH
  "Where the bash completion for pctl is installed")

install(TARGETS pctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET pbench)
  install(TARGETS pbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET pctld)
  install(TARGETS pctld RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
endif()

# The unit names /usr/sbin/pctld; an install under another prefix names that one instead.
# The prefix is known only at install time (`cmake --install --prefix`), so the unit is written then.
install(CODE "
  file(READ \"${CMAKE_SOURCE_DIR}/etc/pctld.service\" unit)
  string(REPLACE \"/usr/sbin/pctld\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SBINDIR}/pctld\" unit \"\${unit}\")
  file(WRITE \"${CMAKE_BINARY_DIR}/install/pctld.service\" \"\${unit}\")
")
install(FILES ${CMAKE_BINARY_DIR}/install/pctld.service DESTINATION ${PCTL_SYSTEMD_UNITDIR})

# /run/pctl needs no tmpfiles.d entry: the unit's RuntimeDirectory=pctl creates it.
install(FILES ${CMAKE_SOURCE_DIR}/etc/pctl.conf DESTINATION ${PCTL_INSTALL_CONFDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/etc/policies.d/ DESTINATION ${PCTL_INSTALL_CONFDIR}/policies.d
  FILES_MATCHING PATTERN "*.conf")

install(FILES ${CMAKE_SOURCE_DIR}/etc/bash-completion/pctl DESTINATION ${PCTL_BASH_COMPLETIONSDIR})

foreach(section 1 5 8)
  file(GLOB pages CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/man/*.${section})
  install(FILES ${pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
