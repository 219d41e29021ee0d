# Shared by scripts/setup.d/*.sh: install Debian packages as root, or say why not.
# Usage: apt_install "what it is for" PACKAGE...   (returns non-zero when it cannot)
apt_install() {
  local why="$1"
  shift
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "    needs root and apt-get to install $*; $why" >&2
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
