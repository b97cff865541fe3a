// Precompiled header for the torch-using parts of core. Never <torch/torch.h>: it costs ~25 s
// per translation unit on 2 cores; ATen plus the narrow torch headers cost a third of that.
#pragma once
#include <ATen/ATen.h>
#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>
