# Every podtax image for every architecture the users run: x86 servers and Raspberry Pis (64-bit).
#
#   docker buildx bake                 # build all images for linux/amd64 and linux/arm64
#   docker buildx bake --push          # ... and push them to $REGISTRY
#   docker buildx bake runner          # one image
#   make images                        # the same, after checking the pinned Debian packages
#
# Base images are pinned by digest in each Dockerfile (a multi-arch index), Python packages come
# from requirements.lock (hashes for both architectures), and the benchmark tools are pinned Debian
# 12 builds that `python tools/check_debian_pins.py` checks exist for both architectures.

variable "REGISTRY" {
  default = "ghcr.io/podtax"
}

variable "VERSION" {
  default = "0.1.0"
}

variable "PLATFORMS" {
  default = "linux/amd64,linux/arm64"
}

group "default" {
  targets = ["bench", "runner", "host-agent", "parser", "analyzer", "scheduler"]
}

target "_common" {
  context   = "."
  platforms = split(",", PLATFORMS)
  labels = {
    "org.opencontainers.image.source" = "https://github.com/podtax/podtax"
  }
}

target "bench" {
  inherits   = ["_common"]
  dockerfile = "deploy/bench-image/Dockerfile"
  tags       = ["${REGISTRY}/bench:${VERSION}"]
}

target "runner" {
  inherits   = ["_common"]
  dockerfile = "services/runner/Dockerfile"
  tags       = ["${REGISTRY}/runner:${VERSION}"]
}

target "host-agent" {
  inherits   = ["_common"]
  dockerfile = "services/host_agent/Dockerfile"
  tags       = ["${REGISTRY}/host-agent:${VERSION}"]
}

target "parser" {
  inherits   = ["_common"]
  dockerfile = "services/parser/Dockerfile"
  tags       = ["${REGISTRY}/parser:${VERSION}"]
}

target "analyzer" {
  inherits   = ["_common"]
  dockerfile = "services/analyzer/Dockerfile"
  tags       = ["${REGISTRY}/analyzer:${VERSION}"]
}

target "scheduler" {
  inherits   = ["_common"]
  dockerfile = "services/scheduler/Dockerfile"
  tags       = ["${REGISTRY}/scheduler:${VERSION}"]
}
