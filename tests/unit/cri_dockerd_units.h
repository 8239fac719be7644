#pragma once
// cri-dockerd's systemd units as its packages install them (packaging/systemd/ at
// Mirantis/cri-dockerd master), abridged to what dockershim migrate reads, with a comment
// and settings it does not read left in.
namespace testutil {

inline constexpr char kCriDockerService[] = R"([Unit]
Description=CRI Interface for Docker Application Container Engine
After=network-online.target firewalld.service docker.service
Requires=cri-docker.socket

[Service]
Type=notify
ExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd://
ExecReload=/bin/kill -s HUP $MAINPID
# Limits cost accounting in the kernel.
LimitNOFILE=infinity
KillMode=process

[Install]
WantedBy=multi-user.target
)";

inline constexpr char kCriDockerSocket[] = R"([Unit]
Description=CRI Docker Socket for the API
PartOf=cri-docker.service

[Socket]
ListenStream=%t/cri-dockerd.sock
SocketMode=0660
SocketUser=root
SocketGroup=docker

[Install]
WantedBy=sockets.target
)";

}  // namespace testutil
