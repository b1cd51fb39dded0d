// Size parsing and config validation: every bad input names the key and what is allowed.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/plan/config.hpp"
#include "support.hpp"

using namespace ckpt;
using json = nlohmann::json;

namespace {

json base() {
  return json::parse(R"({"model": "tiny", "parallelism": {"tp": 1, "dp": "auto"},
                         "layout": "file-per-shard", "backend": "posix", "block_size": "1M"})");
}

// Expects a ConfigError whose message contains every fragment.
void expect_error(const json& doc, std::initializer_list<const char*> fragments) {
  try {
    parse_config(doc);
    FAIL() << "no error for " << doc.dump();
  } catch (const ConfigError& e) {
    std::string m = e.what();
    for (const char* f : fragments)
      EXPECT_NE(m.find(f), std::string::npos) << "'" << f << "' not in: " << m;
  }
}

}  // namespace

TEST(Units, ParsesBinarySizes) {
  EXPECT_EQ(parse_size("4096", "x"), 4096u);
  EXPECT_EQ(parse_size("4K", "x"), 4096u);
  EXPECT_EQ(parse_size("4k", "x"), 4096u);
  EXPECT_EQ(parse_size("4KiB", "x"), 4096u);
  EXPECT_EQ(parse_size("1M", "x"), 1u << 20);
  EXPECT_EQ(parse_size("1MiB", "x"), 1u << 20);
  EXPECT_EQ(parse_size("2GiB", "x"), 2ull << 30);
  EXPECT_EQ(parse_size("2 GB", "x"), 2ull << 30);
  EXPECT_EQ(parse_size("1T", "x"), 1ull << 40);
  EXPECT_EQ(parse_size("0", "x", true), 0u);
}

TEST(Units, RejectsBadSizes) {
  for (const char* bad : {"", "0", "-1", "-4K", "abc", "4X", "4KX", "1.5M", "4K junk",
                          "99999999999999999999", "20000000P"}) {
    try {
      parse_size(bad, "'block_size'");
      FAIL() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("'block_size'"), std::string::npos) << e.what();
    }
  }
}

TEST(Units, FormatsCounts) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1000), "1.00K");
  EXPECT_EQ(format_count(3'700'000), "3.70M");
  EXPECT_EQ(format_count(2'105'344), "2.11M");
  EXPECT_EQ(format_count(6'738'415'616), "6.74B");
  EXPECT_EQ(format_count(68'976'648'192), "69.0B");
  EXPECT_EQ(format_count(405'853'388'800), "406B");
  EXPECT_EQ(format_count(999'600), "1.00M");  // rounds up into the next unit, never "1000K"
  EXPECT_EQ(format_count(1'010'000'000'000), "1.01T");
}

TEST(Units, FormatsBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(3ull << 30), "3.00 GiB");
}

TEST(Config, DefaultConfigIsValid) {
  RunConfig rc = parse_config(default_config());
  ASSERT_EQ(rc.points.size(), 1u);
  EXPECT_EQ(rc.points[0].backend, "posix");
  EXPECT_EQ(rc.points[0].layout.kind, LayoutKind::file_per_shard);
  EXPECT_TRUE(rc.points[0].direct);
  EXPECT_EQ(rc.resolved["block_size"], 1 << 20);
}

TEST(Config, ResolvedEchoHasDefaults) {
  RunConfig rc = parse_config(base());
  const auto& r = rc.resolved;
  for (const char* k : {"model", "parallelism", "layout", "backend", "block_size", "direct", "sync",
                        "repetitions", "verify", "keep", "preallocate", "cache", "queue_depth"})
    EXPECT_TRUE(r.contains(k)) << k;
  EXPECT_EQ(r["sync"], "end");
  EXPECT_EQ(r["repetitions"], 1);
}

TEST(Config, UnknownKeyNamed) {
  json d = base();
  d["blocksize"] = "1M";
  expect_error(d, {"unknown key 'blocksize'", "block_size"});
  json d2 = base();
  d2["parallelism"]["tensor"] = 2;
  expect_error(d2, {"parallelism.tensor"});
}

TEST(Config, WrongTypeNamed) {
  json d = base();
  d["direct"] = "yes";
  expect_error(d, {"'direct'", "true or false", "string"});
  json d2 = base();
  d2["repetitions"] = "3";
  expect_error(d2, {"'repetitions'", "integer"});
  json d3 = base();
  d3["block_size"] = true;
  expect_error(d3, {"'block_size'", "size"});
}

TEST(Config, BadSizesNamed) {
  for (json v : {json("0"), json(0), json(-4096), json("-1M"), json("lots"), json("1.5M")}) {
    json d = base();
    d["block_size"] = v;
    expect_error(d, {"'block_size'"});
  }
}

TEST(Config, OutOfRangeNamed) {
  json d = base();
  d["repetitions"] = 0;
  expect_error(d, {"'repetitions'", "out of range", "1 to"});
  json d2 = base();
  d2["queue_depth"] = 5000;
  expect_error(d2, {"'queue_depth'", "4096"});
}

TEST(Config, BadChoicesListAllowed) {
  json d = base();
  d["sync"] = "always";
  expect_error(d, {"'sync'", "always", "none, file, end"});
  json d2 = base();
  d2["layout"] = "one-big-file";
  expect_error(d2, {"'layout'", "file-per-tensor", "shared-file"});
  json d3 = base();
  d3["backend"] = "libaio";
  expect_error(d3, {"'backend'", "libaio", "posix", "io_uring"});
}

TEST(Config, UnknownKeyInAnUnusedBackendSectionIsAnError) {
  // backend posix, but the mpiio section has a typo: caught now, not when a sweep reaches it.
  json d2 = base();
  d2["mpiio"] = {{"mode", "collective"}, {"hint", {}}};
  expect_error(d2, {"mpiio.hint", "hints"});
  // Known keys of an unused section are accepted as they are (parsed when that backend is used).
  json ok = base();
  ok["io_uring"] = {{"fixed_buffers", true}, {"sqpoll", true}};
  ok["hdf5"] = {{"transfer", "collective"}};
  EXPECT_NO_THROW(parse_config(ok));
  // The keys of a backend this build leaves out are not known, so not checked.
  CKPT_SKIP_UNLESS_BUILT("io_uring");
  json d = base();
  d["io_uring"] = {{"fixed_bufers", true}};
  expect_error(d, {"io_uring.fixed_bufers", "fixed_buffers"});
}

TEST(Config, DirectNeedsAlignedBlockSize) {
  json d = base();
  d["direct"] = true;
  d["block_size"] = 1000;
  expect_error(d, {"'block_size'", "1000", "multiple of 512"});
  json d2 = base();
  d2["direct"] = true;
  d2["align"] = 4096;
  d2["block_size"] = "6K";
  expect_error(d2, {"'block_size'", "'align' 4096"});
  json ok = base();
  ok["direct"] = true;
  ok["block_size"] = "4K";
  EXPECT_NO_THROW(parse_config(ok));
}

// region_align: "auto" is the stripe size when set, else 1 MiB, rounded up to `align`.
TEST(Config, RegionAlignAutoZeroAndBad) {
  json d = base();
  RunConfig rc = parse_config(d);
  EXPECT_EQ(region_align_bytes(rc.points[0], 4096), 1u << 20);
  EXPECT_EQ(rc.points[0].resolved["region_align"], "auto");
  d["stripe_size"] = "4M";
  EXPECT_EQ(region_align_bytes(parse_config(d).points[0], 4096), 4u << 20);
  d["region_align"] = 0;
  EXPECT_EQ(region_align_bytes(parse_config(d).points[0], 4096), 0u);
  d["region_align"] = "6K";
  EXPECT_EQ(region_align_bytes(parse_config(d).points[0], 4096), 8192u);
  d["region_align"] = 1000;
  expect_error(d, {"'region_align'", "1000", "multiple of 512"});
  d["region_align"] = "sometimes";
  expect_error(d, {"region_align"});
}

TEST(Config, AlignMustBePowerOfTwo) {
  json d = base();
  d["align"] = 3000;
  expect_error(d, {"'align'", "power of two"});
}

TEST(Config, SweepIsCartesianInStableOrder) {
  json d = base();
  d.erase("backend");
  d.erase("block_size");
  d["sweep"] = {
      {"backend", {"posix", "mpiio"}}, {"block_size", {"64K", "1M"}}, {"queue_depth", {1, 8}}};
  RunConfig rc = parse_config(d);
  ASSERT_EQ(rc.points.size(), 8u);
  // First key (alphabetical: backend) varies slowest.
  EXPECT_EQ(rc.points[0].backend, "posix");
  EXPECT_EQ(rc.points[3].backend, "posix");
  EXPECT_EQ(rc.points[4].backend, "mpiio");
  EXPECT_EQ(rc.points[0].block_size, 64u << 10);
  EXPECT_EQ(rc.points[2].block_size, 1u << 20);
  EXPECT_EQ(rc.points[1].queue_depth, 8);
  EXPECT_EQ(rc.points[5].params["queue_depth"], 8);
}

TEST(Config, SweepExcludeAndShorthands) {
  json d = base();
  d.erase("parallelism");
  d["sweep"] = {{"tp", {1, 2}}, {"zero_stage", {0, 1, 3}}};
  d["exclude"] = json::array({{{"tp", 2}, {"zero_stage", 3}}});
  RunConfig rc = parse_config(d);
  EXPECT_EQ(rc.points.size(), 5u);
  for (const auto& p : rc.points)
    EXPECT_FALSE(p.parallelism.tp == 2 && p.parallelism.zero_stage == 3);
}

TEST(Config, SweepErrorsNamed) {
  json d = base();
  d["sweep"] = {{"colour", {1, 2}}};
  expect_error(d, {"'sweep.colour'", "not a sweepable key"});
  json d2 = base();
  d2["sweep"] = {{"queue_depth", json::array()}};
  expect_error(d2, {"'sweep.queue_depth'", "non-empty list"});
  json d3 = base();
  d3["sweep"] = {{"queue_depth", {1, 0}}};
  expect_error(d3, {"'queue_depth'", "sweep point"});
}

TEST(Config, PresetsFillOnlyUnsetKeys) {
  json t = base();
  t.erase("layout");
  t["preset"] = "torchsnapshot";
  RunConfig rt = parse_config(t);
  EXPECT_EQ(rt.points[0].layout.kind, LayoutKind::torchsnapshot);
  EXPECT_EQ(rt.points[0].layout.chunk_size, 512u << 20);
  EXPECT_EQ(rt.points[0].sync, SyncPolicy::none);
  CKPT_SKIP_UNLESS_BUILT("io_uring");  // datastates' backend
  json d = base();
  d.erase("layout");
  d.erase("backend");
  d["preset"] = "datastates";
  RunConfig rc = parse_config(d);
  const auto& p = rc.points[0];
  EXPECT_EQ(p.layout.kind, LayoutKind::deepspeed);  // DataStates-LLM writes DeepSpeed's files
  EXPECT_EQ(p.backend, "io_uring");
  EXPECT_TRUE(p.direct);
  EXPECT_EQ(p.queue_depth, 32);
  EXPECT_EQ(p.block_size, 1u << 20);  // set explicitly in base(): the config wins
  EXPECT_EQ(p.resolved["preset"], "datastates");
}

// A placeholder of a backend the build leaves out (what src/io/backends/not_built.cpp registers for
// -DCKPT_WITH_HDF5=OFF / -DCKPT_WITH_IO_URING=OFF): listed with the reason, never usable.
TEST(Config, NotBuiltBackendPlaceholder) {
  const BackendFactory f =
      not_built_backend("hdf5", "parallel HDF5", "CKPT_WITH_HDF5", "hdf5_version");
  EXPECT_EQ(f.name, "hdf5");
  EXPECT_EQ(f.not_built, "not built (configure with -DCKPT_WITH_HDF5=ON)");
  EXPECT_EQ(f.probe(), f.not_built);
  EXPECT_EQ(f.library(), std::make_pair(std::string("hdf5_version"), std::string("not built")));
  PointConfig p;
  p.backend = "hdf5";
  ckpt_test::expect_config_error([&] { f.validate(p); }, "-DCKPT_WITH_HDF5=ON");
  ckpt_test::expect_config_error([&] { f.create(p); }, "not built");
}

// In a build without hdf5 / io_uring: a config naming the backend - directly, in a sweep, through
// a preset or an override - is refused with the key, the value and the reason.
TEST(Config, NotBuiltBackendRefused) {
  const std::string h5 = ckpt_test::backend_not_built("hdf5");
  const std::string ur = ckpt_test::backend_not_built("io_uring");
  if (h5.empty() && ur.empty()) GTEST_SKIP() << "hdf5 and io_uring are both built";
  if (!h5.empty()) {
    json d = base();
    d["backend"] = "hdf5";
    d["hdf5"] = {{"transfer", "collective"}};
    expect_error(d, {"'backend'", "\"hdf5\"", "not built (configure with -DCKPT_WITH_HDF5=ON)",
                     "this ckptbench has: posix"});
    json o = base();
    apply_overrides(o, {"backend=hdf5"});
    expect_error(o, {"'backend'", "\"hdf5\"", "-DCKPT_WITH_HDF5=ON"});
  }
  if (!ur.empty()) {
    json s = base();
    s.erase("backend");
    s["sweep"] = {{"backend", {"posix", "io_uring"}}};
    expect_error(s, {"'backend'", "\"io_uring\"", "-DCKPT_WITH_IO_URING=ON", "sweep point"});
    json p = base();
    p.erase("backend");
    p["preset"] = "datastates";
    expect_error(p, {"'backend'", "\"io_uring\" (set by preset \"datastates\")",
                     "not built (configure with -DCKPT_WITH_IO_URING=ON)"});
  }
}

TEST(Config, UnknownPresetListsAllowed) {
  json d = base();
  d["preset"] = "nemo";
  expect_error(d, {"'preset'", "nemo", "torch-save", "deepspeed", "megatron-dist", "datastates"});
}

// ---- Command-line overrides (--set) -------------------------------------------------------

TEST(Overrides, ValuesAreJsonElseStrings) {
  json doc = {{"model", "tiny"}};
  apply_overrides(doc, {"block_size=4M", "queue_depth=8", "direct=true", "model.scale=0.5",
                        "io_uring.fixed_buffers=false", "tp=2"});
  EXPECT_EQ(doc["block_size"], "4M");
  EXPECT_EQ(doc["queue_depth"], 8);
  EXPECT_EQ(doc["direct"], true);
  // A model given by name becomes {"name": ...} to take a nested key.
  EXPECT_EQ(doc["model"]["name"], "tiny");
  EXPECT_EQ(doc["model"]["scale"], 0.5);
  EXPECT_EQ(doc["io_uring"]["fixed_buffers"], false);
  EXPECT_EQ(doc["parallelism"]["tp"], 2);
  EXPECT_NO_THROW(parse_config(doc));
}

TEST(Overrides, FixedKeyRemovesSweepAxisAndAdjustsExclude) {
  json doc = json::parse(R"({"model": "tiny", "backend": "mpiio",
    "sweep": {"block_size": ["1M", "4M"], "queue_depth": [1, 8]},
    "exclude": [{"block_size": "1M", "queue_depth": 1}, {"block_size": "4M", "queue_depth": 8}]})");
  auto notes = apply_overrides(doc, {"block_size=1M"});
  EXPECT_FALSE(doc["sweep"].contains("block_size"));
  EXPECT_EQ(doc["block_size"], "1M");
  // The entry that excluded 1M still excludes queue depth 1; the one about 4M no longer applies.
  ASSERT_EQ(doc["exclude"].size(), 1u);
  EXPECT_EQ(doc["exclude"][0], json({{"queue_depth", 1}}));
  EXPECT_EQ(notes.size(), 2u);
  RunConfig rc = parse_config(doc);
  EXPECT_EQ(rc.points.size(), 1u);  // queue depth 8 only
  EXPECT_EQ(rc.points[0].queue_depth, 8);
}

TEST(Overrides, SweepAxisReplacesTopLevelKey) {
  json doc = {{"model", "tiny"}, {"block_size", "1M"}};
  apply_overrides(doc, {R"(sweep.block_size=["64K","1M"])", "sweep.io_uring.fixed_buffers=[true]",
                        "repetitions=3"});
  EXPECT_FALSE(doc.contains("block_size"));
  EXPECT_EQ(doc["sweep"]["block_size"].size(), 2u);
  EXPECT_TRUE(doc["sweep"].contains("io_uring.fixed_buffers"));
  RunConfig rc = parse_config(doc);
  EXPECT_EQ(rc.points.size(), 2u);
  EXPECT_EQ(rc.repetitions, 3);
}

TEST(Overrides, MalformedOnesNameTheOverride) {
  json doc = {{"model", "tiny"}};
  auto msg = [&](const std::string& s) {
    try {
      apply_overrides(doc, {s});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg("block_size").find("expected key=value"), std::string::npos);
  EXPECT_NE(msg("=4M").find("expected key=value"), std::string::npos);
  EXPECT_NE(msg("block_size=").find("no value"), std::string::npos);
  EXPECT_NE(msg("a..b=1").find("not a key path"), std::string::npos);
  EXPECT_NE(msg("blocksize=1M").find("unknown key 'blocksize'"), std::string::npos);
  EXPECT_NE(msg(R"(sweep.block_size=["1M",)").find("not valid JSON"), std::string::npos);
}

TEST(Config, VerifyModes) {
  // true = "inline", false = "off"; "after" needs source "shard" in every point and is echoed.
  for (const auto& [v, verify, after] :
       std::vector<std::tuple<json, bool, bool>>{{json(true), true, false},
                                                 {json(false), false, false},
                                                 {json("inline"), true, false},
                                                 {json("off"), false, false},
                                                 {json("after"), true, true}}) {
    json d = base();
    d["verify"] = v;
    d["source"] = "shard";
    RunConfig rc = parse_config(d);
    EXPECT_EQ(rc.verify, verify) << v.dump();
    EXPECT_EQ(rc.verify_after, after) << v.dump();
    EXPECT_EQ(rc.resolved["verify"], after ? json("after") : json(verify)) << v.dump();
  }
  json d = base();
  d["verify"] = "later";
  expect_error(d, {"'verify'", "\"later\"", "\"after\"", "\"inline\""});
  d["verify"] = 1;
  expect_error(d, {"'verify'", "got 1"});
  d["verify"] = "after";
  expect_error(d, {"'verify': \"after\"", "'source': \"shard\"", "\"pool\""});
  d["sweep"] = {{"source", {"shard", "pool"}}};
  expect_error(d, {"'verify': \"after\"", "[in sweep point {\"source\":\"pool\"}]"});
}

// The key tables (cli/keys.cpp) are the parser: each row's default is what a point without the
// key resolves to, and the resolved config echoes every row that applies.
TEST(Keys, DefaultsAreWhatThePointResolvesTo) {
  const RunConfig rc = parse_config(json{{"model", "tiny"}});
  const json& res = rc.resolved;
  int checked = 0;
  for (const auto& k : config_keys_json()) {
    const std::string name = k["name"];
    const json& def = k["default"];
    if (def.is_null() || name == "layout") continue;  // required, computed, or sizing-dependent
    ASSERT_TRUE(res.contains(name)) << name << " not echoed";
    if (k["type"] == "size" && def.is_string())
      EXPECT_EQ(res[name], parse_size(def.get<std::string>(), name, true)) << name;
    else if (k["type"].get<std::string>().rfind("number", 0) == 0)
      EXPECT_DOUBLE_EQ(res[name].get<double>(), def.get<double>()) << name;
    else
      EXPECT_EQ(res[name], def) << name;
    checked++;
  }
  EXPECT_GE(checked, 30);
  EXPECT_EQ(res["layout"], "file-per-shard");
}

TEST(Keys, EveryRowIsAKeyOnceAndPresetsSetOnlyTableKeys) {
  std::set<std::string> seen;
  for (const auto& k : point_keys()) EXPECT_TRUE(seen.insert(k).second) << "twice: " << k;
  for (const auto& k : run_keys()) EXPECT_TRUE(seen.insert(k).second) << "twice: " << k;
  for (const auto& b : backend_registry()) EXPECT_TRUE(seen.count(b.name)) << b.name;
  for (const auto& p : presets())
    for (auto it = p.settings.begin(); it != p.settings.end(); ++it)
      EXPECT_TRUE(std::find(point_keys().begin(), point_keys().end(), it.key()) !=
                  point_keys().end())
          << p.name << " sets " << it.key();
}

// Every preset is its framework: no preallocation (none of them fallocates), the state resident
// in memory unless the point asks for what that cannot do, and datastates saves asynchronously.
TEST(Presets, FrameworkSourceNoPreallocationAndAsyncDataStates) {
  for (const auto& p : presets()) {
    json doc = {{"model", "tiny"}, {"preset", p.name}};
    if (p.name == "mlperf-storage") doc["model"] = {{"name", "tiny"}, {"sizing", "dlio"}};
    const PointConfig pc = parse_config(doc).points.at(0);
    EXPECT_FALSE(pc.preallocate) << p.name;
    EXPECT_EQ(pc.source, SourceMode::shard) << p.name;
    EXPECT_EQ(pc.source_basis, "preset " + p.name);
  }
  const PointConfig ds = parse_config({{"model", "tiny"}, {"preset", "datastates"}}).points.at(0);
  EXPECT_EQ(ds.save_mode, SaveMode::async);
  EXPECT_EQ(parse_config({{"model", "tiny"}, {"preset", "datastates"}, {"save_mode", "sync"}})
                .points.at(0)
                .save_mode,
            SaveMode::sync);
  // The pool where the point asks for it, or for what the resident state cannot do.
  const PointConfig own =
      parse_config({{"model", "tiny"}, {"preset", "torch-save"}, {"source", "pool"}}).points.at(0);
  EXPECT_EQ(own.source, SourceMode::pool);
  EXPECT_EQ(own.source_basis, "config");
  const PointConfig emu =
      parse_config({{"model", "tiny"},
                    {"preset", "torch-save"},
                    {"parallelism", {{"tp", 1}, {"dp", 1}, {"emulate_world", 8}}}})
          .points.at(0);
  EXPECT_EQ(emu.source, SourceMode::pool);
  EXPECT_NE(emu.source_basis.find("preset torch-save, pool:"), std::string::npos);
  EXPECT_NE(emu.source_basis.find("emulate_world"), std::string::npos);
  // An asynchronous save snapshots the resident state; without preset or async: the pool.
  const PointConfig as = parse_config({{"model", "tiny"}, {"save_mode", "async"}}).points.at(0);
  EXPECT_EQ(as.source, SourceMode::shard);
  EXPECT_EQ(as.source_basis, "save_mode async");
  const PointConfig plain = parse_config({{"model", "tiny"}}).points.at(0);
  EXPECT_EQ(plain.source, SourceMode::pool);
  EXPECT_EQ(plain.source_basis, "default");
}

TEST(Keys, ChoiceRowsAcceptEveryAllowedValueAndEchoIt) {
  for (const auto& o : point_options()) {
    if (o.allowed.empty() || o.name == "backend" || o.name == "transfer") continue;
    for (const auto& v : o.allowed) {
      json doc = {{"model", "tiny"}, {o.name, v}};
      if (o.name == "layout" && (v == "aggregated-node" || v == "dlio")) continue;
      if (o.name == "cache" && v == "direct") doc["direct"] = true;
      if (o.name == "framing" && v == "torch-zip") doc["layout"] = "aggregated-rank";
      try {
        EXPECT_EQ(parse_config(doc).resolved[o.name], v) << o.name;
      } catch (const ConfigError& e) {
        ADD_FAILURE() << o.name << "=" << v << ": " << e.what();
      }
    }
  }
}

TEST(EnumNames, EachMappingRoundTrips) {
  auto round = [](const auto& names) {
    for (const auto& n : names.names()) {
      auto v = names.find(n);
      ASSERT_TRUE(v.has_value()) << n;
      EXPECT_EQ(names.name(*v), n);
    }
    EXPECT_FALSE(names.find("zz-not-a-name").has_value());
  };
  round(sync_names());
  round(cache_names());
  round(source_names());
  round(save_mode_names());
  round(compute_kind_names());
  round(restore_method_names());
  round(transfer_mode_names());
  round(framing_names());
  round(layout_kind_names());
  EXPECT_EQ(layout_kind_names().names().size(), 11u);
  EXPECT_EQ(cache_names().list(), "auto, direct, fadvise, rank-shift, drop-caches, none");
}
