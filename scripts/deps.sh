#!/bin/sh
# Install everything toud needs to build, test, fuzz, package and demo on
# Debian 12.
# Needs root.  Safe to run again.
set -eu
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: run as root (it calls apt-get)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The tests start their own HTTP proxies (tinyproxy; squid, for Basic
# authentication); a service that the package starts on a booted host is
# stopped again, unless it was there.
had_tinyproxy=$(dpkg-query -W -f='${Status}' tinyproxy 2>/dev/null || true)
had_squid=$(dpkg-query -W -f='${Status}' squid 2>/dev/null || true)
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
	build-essential autoconf automake libtool pkg-config \
	libevent-dev libssl-dev libcap-ng-dev libsystemd-dev systemd check libjansson-dev \
	clang libclang-rt-14-dev valgrind \
	iproute2 ethtool nftables conntrack iptables libnetfilter-queue-dev \
	tcpdump tshark socat iperf3 sockperf curl tinyproxy squid python3 python3-prometheus-client openssl procps psmisc iputils-ping \
	mandoc groff-base debootstrap systemd-container zstd \
	debhelper lintian \
	>/dev/null
case $had_tinyproxy in
*" installed") ;;
*)	if [ -d /run/systemd/system ]; then
		systemctl disable --now tinyproxy.service >/dev/null 2>&1 || true
	fi ;;
esac
case $had_squid in
*" installed") ;;
*)	if [ -d /run/systemd/system ]; then
		systemctl disable --now squid.service >/dev/null 2>&1 || true
	fi ;;
esac
