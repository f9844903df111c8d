#!/usr/bin/env bash
# Installs what infrabench needs to build and test on Debian 12 (apt-get). The CUDA toolkit is not
# a Debian package: when /usr/local/cuda exists, the CUDA backends are built as well.
set -euo pipefail
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
packages=(
  build-essential cmake ninja-build pkg-config git ccache
  nlohmann-json3-dev libcli11-dev libhwloc-dev liburing-dev
  libopenmpi-dev openmpi-bin iproute2 strace
  slurm-wlm munge
  libgtest-dev libgmock-dev libbenchmark-dev
  fio
  libturbojpeg0-dev libopencv-core-dev libopencv-imgproc-dev
  libopenblas-dev libdnnl-dev
  python3 python3-jsonschema python3-pytest python3-prometheus-client
  libsqlite3-dev libjs-chart.js chromium clang libclang-rt-14-dev clang-19 libclang-rt-19-dev
  groff-base zsh
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "all build and test dependencies are installed"
fi
