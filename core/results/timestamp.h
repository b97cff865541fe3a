#pragma once
// The time stamp of Provenance::created: now, UTC, ISO 8601 to the second ("2026-12-02T21:15:14Z").
#include <string>

namespace hs {

std::string utcTimestamp();

}  // namespace hs
