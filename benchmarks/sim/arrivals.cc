// The arrival generators: each draws exponential gaps at the rate in force, from a seeded
// Mersenne Twister.
#include "benchmarks/sim/arrivals.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

namespace tally::sim {
namespace {

Duration Seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}
double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// Poisson arrivals at `rate` in [from, to), appended to `out`.
void Poisson(double rate, Time from, Time to, std::mt19937_64& rng, std::vector<Time>& out) {
  if (rate <= 0) return;
  std::exponential_distribution<double> gap(rate);
  for (Time t = from + Seconds(gap(rng)); t < to; t += Seconds(gap(rng))) out.push_back(t);
}

}  // namespace

absl::StatusOr<ArrivalKind> ParseArrivalKind(std::string_view name) {
  if (name == "poisson") return ArrivalKind::kPoisson;
  if (name == "bursty") return ArrivalKind::kBursty;
  if (name == "serverless") return ArrivalKind::kServerless;
  return absl::InvalidArgumentError(
      fmt::format("unknown arrivals '{}' (known: poisson, bursty, serverless)", name));
}

std::string_view ArrivalKindName(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kPoisson:
      return "poisson";
    case ArrivalKind::kBursty:
      return "bursty";
    case ArrivalKind::kServerless:
      return "serverless";
  }
  return "?";
}

std::vector<Time> GenerateArrivals(const ArrivalSpec& spec, Duration horizon, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Time> out;
  const Time end = Time{0} + horizon;
  switch (spec.kind) {
    case ArrivalKind::kPoisson:
      Poisson(spec.rate, Time{0}, end, rng, out);
      break;
    case ArrivalKind::kBursty: {
      const double on = ToSeconds(spec.on_mean), off = ToSeconds(spec.off_mean);
      std::exponential_distribution<double> on_length(1 / on), off_length(1 / off);
      for (Time t{0}; t < end;) {
        const Time on_end = std::min(end, t + Seconds(on_length(rng)));
        Poisson(spec.rate * (on + off) / on, t, on_end, rng, out);
        t = on_end + Seconds(off_length(rng));
      }
      break;
    }
    case ArrivalKind::kServerless: {
      // exp(N(mu, sigma)) has mean exp(mu + sigma^2 / 2): mu = -sigma^2 / 2 keeps the mean 1.
      std::lognormal_distribution<double> factor(-spec.sigma * spec.sigma / 2, spec.sigma);
      for (Time t{0}; t < end; t += spec.bucket) {
        Poisson(spec.rate * factor(rng), t, std::min(end, t + spec.bucket), rng, out);
      }
      break;
    }
  }
  return out;
}

}  // namespace tally::sim
