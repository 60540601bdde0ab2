# SPDX-License-Identifier: Apache-2.0
# The Debian package: cpack -G DEB in a Release build makes
# abuseguard_<version>_<arch>.deb. The install rules below only run on
# cmake --install and cpack, never in a plain build. Included at the end of
# the top-level CMakeLists.txt, after the abuseguard target exists.
include(GNUInstallDirs)

set(AG_PKG_SRC ${CMAKE_SOURCE_DIR}/packaging)
set(AG_PKG_GEN ${CMAKE_BINARY_DIR}/packaging)

# A sanitizer build links libasan and aborts on a report; it is no package.
if(AG_SANITIZE)
    install(CODE "message(FATAL_ERROR \"abuseguard: package a build \
without AG_SANITIZE (a Release build)\")")
endif()
install(TARGETS abuseguard RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The configuration file and the help text come from the binary's --help,
# the flags' one list, at install time (gen-conf.awk).
install(CODE "execute_process(
    COMMAND sh \"${AG_PKG_SRC}/gen-conf.sh\" \"$<TARGET_FILE:abuseguard>\"
            \"${AG_PKG_GEN}\"
    COMMAND_ERROR_IS_FATAL ANY)")
install(FILES ${AG_PKG_GEN}/abuseguard.conf DESTINATION /etc/abuseguard)
install(FILES ${AG_PKG_SRC}/abuseguard.service
        DESTINATION /lib/systemd/system)
install(FILES ${AG_PKG_SRC}/abuseguard.sysusers DESTINATION lib/sysusers.d
        RENAME abuseguard.conf)
# The defaults are compiled in too; these copies are for reading and for
# abuseguard policy import.
install(FILES ${AG_POLICIES}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/abuseguard/policies)
install(FILES ${AG_PKG_GEN}/abuseguard-help.txt ${CMAKE_SOURCE_DIR}/README.md
              ${AG_PKG_SRC}/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The reference the README links to, beside it as in the source tree, so
# that its links to docs/ work in the installed copy too.
set(AG_DOCS http-api admin events configuration operations policies
    pwned monitoring)
list(TRANSFORM AG_DOCS PREPEND ${CMAKE_SOURCE_DIR}/docs/)
list(TRANSFORM AG_DOCS APPEND .md)
install(FILES ${AG_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
# The monitoring mixin, where docs/monitoring.md's links find it.
install(FILES ${CMAKE_SOURCE_DIR}/deploy/monitoring/abuseguard-rules.yaml
              ${CMAKE_SOURCE_DIR}/deploy/monitoring/abuseguard-dashboard.json
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/deploy/monitoring)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME abuseguard)
set(CPACK_STRIP_FILES ON)
set(AG_PACKAGE_MAINTAINER
    "abuseguard maintainers <maintainers@users.noreply.a-seed-7d19dc02.example>"
    CACHE STRING "Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT ${AG_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${AG_PACKAGE_MAINTAINER})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "login and OTP abuse protection as an HTTP service")
set(CPACK_PACKAGE_DESCRIPTION
    "abuseguard answers POST /check-login and /check-otp for auth backends and
SMS senders: each check is measured against rate-limit policies kept in
Redis, so any number of instances enforce one global count. Policies live
in SQLite; identifiers are hashed with a secret key before they reach
Redis, logs or metrics.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# dpkg-shlibdeps (dpkg-dev) derives the libraries from the binary; the
# postinst needs systemd-sysusers and an awk, neither of them Essential
# (a root file system of the Essential set alone, as the container
# image's, has no awk).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd | systemd-sysusers, mawk | awk")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS redis-server)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${AG_PKG_SRC}/postinst ${AG_PKG_SRC}/prerm ${AG_PKG_SRC}/postrm
    ${AG_PKG_SRC}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# include(CPack) also makes a package_source target; keep build trees,
# local state and git out of it.
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/var/"
    "/bench/out/")
include(CPack)
