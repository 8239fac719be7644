# cmake --install: what a node needs (the Debian package is built from this).
# A node's layout by default (/usr/bin, /etc), as the package has it.
if(CMAKE_INSTALL_PREFIX_INITIALIZED_TO_DEFAULT)
  set(CMAKE_INSTALL_PREFIX /usr CACHE PATH "install prefix" FORCE)
endif()
include(GNUInstallDirs)
install(TARGETS dockershim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Debian 12 keeps packaged units in /lib/systemd/system (dh_installsystemd enables them).
set(DOCKERSHIM_SYSTEMD_UNIT_DIR "/lib/systemd/system" CACHE PATH "where the systemd units go")
install(FILES examples/systemd/dockershim.service examples/systemd/dockershim.socket
        DESTINATION ${DOCKERSHIM_SYSTEMD_UNIT_DIR})
# Under /etc, a conffile of the package: an operator's edits survive upgrades.
install(FILES examples/config.toml DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/dockershim)
# docs/ beside README.md, as in the tree: the README points into it.
install(FILES README.md ARCHITECTURE.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
# docs/node-setup.md: the CNI bridge, the kubelet's units for kubeadm, the socket at
# cri-dockerd's path (a drop-in to copy, not enabled).
install(FILES examples/crictl.yaml examples/cni/10-dockershim-bridge.conflist
        examples/kubeadm/kubelet.service examples/kubeadm/10-kubeadm.conf examples/kubeadm/cri-dockerd-path.conf
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
