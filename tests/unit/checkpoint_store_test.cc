#include "shim/checkpoint_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/no_wait.h"

namespace shim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using json = nlohmann::json;

const std::string kId1 = std::string(64, 'a');
const std::string kId2 = std::string(63, 'b') + "c";

SandboxCheckpoint Full(const std::string& id) {
  SandboxCheckpoint c;
  c.sandbox_id = id;
  c.name = "nginx-7c5d";
  c.namespace_ = "default";
  c.uid = "0b8e2d4e-1f3a-4c8b-9d2e-5f6a7b8c9d0e";
  c.host_network = false;
  c.port_mappings = {{"tcp", 80, 8080, ""}, {"udp", 53, 5353, "10.0.0.1"}, {"sctp", 9, 0, "::1"}};
  c.bandwidth = network::Bandwidth{1000000, 2000000};
  c.network_plugin = "cni";
  c.network_name = "cbr0";
  c.netns_path = "/proc/1234/ns/net";
  c.ip = "10.88.0.5";
  c.additional_ips = {"fd00::5"};
  c.network_torn_down = true;
  c.adopted_from = kAdoptedFromCriDockerd;
  return c;
}

// Field by field: network::PortMapping/Bandwidth have no operator==, so
// SandboxCheckpoint's defaulted one is deleted.
void ExpectSame(const SandboxCheckpoint& got, const SandboxCheckpoint& want) {
  EXPECT_EQ(got.sandbox_id, want.sandbox_id);
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.namespace_, want.namespace_);
  EXPECT_EQ(got.uid, want.uid);
  EXPECT_EQ(got.host_network, want.host_network);
  ASSERT_EQ(got.port_mappings.size(), want.port_mappings.size());
  for (size_t i = 0; i < got.port_mappings.size(); ++i) {
    EXPECT_EQ(got.port_mappings[i].protocol, want.port_mappings[i].protocol) << i;
    EXPECT_EQ(got.port_mappings[i].container_port, want.port_mappings[i].container_port) << i;
    EXPECT_EQ(got.port_mappings[i].host_port, want.port_mappings[i].host_port) << i;
    EXPECT_EQ(got.port_mappings[i].host_ip, want.port_mappings[i].host_ip) << i;
  }
  ASSERT_EQ(got.bandwidth.has_value(), want.bandwidth.has_value());
  if (got.bandwidth) {
    EXPECT_EQ(got.bandwidth->ingress_bits_per_second, want.bandwidth->ingress_bits_per_second);
    EXPECT_EQ(got.bandwidth->egress_bits_per_second, want.bandwidth->egress_bits_per_second);
  }
  EXPECT_EQ(got.network_plugin, want.network_plugin);
  EXPECT_EQ(got.network_name, want.network_name);
  EXPECT_EQ(got.netns_path, want.netns_path);
  EXPECT_EQ(got.ip, want.ip);
  EXPECT_EQ(got.additional_ips, want.additional_ips);
  EXPECT_EQ(got.network_torn_down, want.network_torn_down);
  EXPECT_EQ(got.adopted_from, want.adopted_from);
}

SandboxCheckpoint ReadOk(CheckpointStore& store, const std::string& id) {
  auto read = store.Read(id);
  if (!read.ok()) {
    ADD_FAILURE() << "Read(" << id << "): " << read.status();
    return {};
  }
  return *read;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string Crc(const std::string& text) {
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size()));
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx", crc);
  return std::string("crc32:") + buf;
}

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ckpt-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    store_ = std::make_unique<CheckpointStore>(root_);
    ASSERT_TRUE(store_->Init().ok());
  }
  void TearDown() override { std::system(("rm -rf '" + root_ + "'").c_str()); }

  std::string Path(const std::string& name) const { return store_->Directory() + "/" + name; }

  std::string root_;
  std::unique_ptr<CheckpointStore> store_;
};

// ---- Encode/Decode ----------------------------------------------------------

TEST(CheckpointCodec, RoundTripsAllFields) {
  SandboxCheckpoint c = Full(kId1);
  auto decoded = DecodeCheckpoint(EncodeCheckpoint(c));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ExpectSame(*decoded, c);

  SandboxCheckpoint minimal;
  minimal.sandbox_id = kId2;
  decoded = DecodeCheckpoint(EncodeCheckpoint(minimal));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ExpectSame(*decoded, minimal);
  EXPECT_FALSE(decoded->bandwidth.has_value());
}

TEST(CheckpointCodec, FormatIsVersionDataAndCrc32OfCanonicalData) {
  json doc = json::parse(EncodeCheckpoint(Full(kId1)));
  EXPECT_EQ(doc["version"], "dockershim/v1");
  EXPECT_EQ(doc["data"]["sandbox_id"], kId1);
  EXPECT_EQ(doc["data"]["namespace"], "default");
  EXPECT_EQ(doc["data"]["port_mappings"][1]["host_ip"], "10.0.0.1");
  EXPECT_EQ(doc["data"]["bandwidth"]["egress_bits_per_second"], 2000000);
  EXPECT_EQ(doc["checksum"], Crc(doc["data"].dump()));
}

TEST(CheckpointCodec, ReadsBackOddValuesItWrote) {
  SandboxCheckpoint c = Full(kId1);
  c.port_mappings = {{"tcp", -1, 70000, ""}};
  c.bandwidth = network::Bandwidth{INT64_MAX, -5};
  c.name = "unicode-\xc3\xa9-\"quoted\"\n";
  auto decoded = DecodeCheckpoint(EncodeCheckpoint(c));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ExpectSame(*decoded, c);
}

TEST(CheckpointCodec, ChecksumSurvivesReformatting) {
  // Another tool may pretty-print the file; the checksum is over canonical data.
  json doc = json::parse(EncodeCheckpoint(Full(kId1)));
  auto decoded = DecodeCheckpoint(doc.dump(4));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ExpectSame(*decoded, Full(kId1));
}

TEST(CheckpointCodec, RejectsWithDistinctMessages) {
  const std::string good = EncodeCheckpoint(Full(kId1));
  json doc = json::parse(good);

  auto bad_json = DecodeCheckpoint(good.substr(0, good.size() / 2));
  EXPECT_THAT(bad_json.status().message(), HasSubstr("not valid JSON"));

  json other = doc;
  other["version"] = "dockershim/v2";
  auto bad_version = DecodeCheckpoint(other.dump());
  EXPECT_THAT(bad_version.status().message(), HasSubstr("unsupported checkpoint version \"dockershim/v2\""));

  json flipped = doc;
  flipped["data"]["ip"] = "10.88.0.6";
  auto bad_sum = DecodeCheckpoint(flipped.dump());
  EXPECT_THAT(bad_sum.status().message(), HasSubstr("checksum mismatch"));

  json no_id = doc;
  no_id["data"].erase("sandbox_id");
  no_id["checksum"] = Crc(no_id["data"].dump());
  auto bad_id = DecodeCheckpoint(no_id.dump());
  EXPECT_THAT(bad_id.status().message(), HasSubstr("no sandbox_id"));

  json wrong_type = doc;
  wrong_type["data"]["host_network"] = "yes";
  wrong_type["checksum"] = Crc(wrong_type["data"].dump());
  EXPECT_THAT(DecodeCheckpoint(wrong_type.dump()).status().message(), HasSubstr("host_network"));

  json bad_port = doc;
  bad_port["data"]["port_mappings"][0]["host_port"] = int64_t{1} << 40;
  bad_port["checksum"] = Crc(bad_port["data"].dump());
  EXPECT_THAT(DecodeCheckpoint(bad_port.dump()).status().message(), HasSubstr("out of range"));

  EXPECT_FALSE(DecodeCheckpoint("").ok());
  EXPECT_FALSE(DecodeCheckpoint("[]").ok());
  EXPECT_FALSE(DecodeCheckpoint("{}").ok());
  for (const auto* s : {&bad_json, &bad_version, &bad_sum, &bad_id}) EXPECT_FALSE(s->ok());
}

TEST(CheckpointCodec, CriDockerdFormatIsNotOurs) {
  auto decoded = DecodeCheckpoint(R"({"version":"v1","name":"p","namespace":"n","data":{},"checksum":123})");
  ASSERT_FALSE(decoded.ok());
  EXPECT_THAT(decoded.status().message(), HasSubstr("cri-dockerd"));
}

// ---- Store ------------------------------------------------------------------

TEST_F(CheckpointStoreTest, InitCreatesPrivateDirectory) {
  struct stat st;
  ASSERT_EQ(::stat(store_->Directory().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(store_->Directory(), root_ + "/sandbox");
  // Init is idempotent and creates missing parents.
  EXPECT_TRUE(store_->Init().ok());
  CheckpointStore nested(root_ + "/a/b");
  EXPECT_TRUE(nested.Init().ok());
  EXPECT_TRUE(Exists(root_ + "/a/b/sandbox"));
}

TEST_F(CheckpointStoreTest, WriteReadRoundTrip) {
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  auto read = store_->Read(kId1);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSame(*read, Full(kId1));
  // Overwrite.
  SandboxCheckpoint changed = Full(kId1);
  changed.network_torn_down = false;
  changed.ip = "10.88.0.9";
  ASSERT_TRUE(store_->Write(changed).ok());
  ExpectSame(ReadOk(*store_, kId1), changed);
}

// A call answered on gRPC's thread (common/no_wait.h) gets what the store holds in memory;
// a file read, which may wait behind another sandbox's fsync, is refused there.
TEST_F(CheckpointStoreTest, AReadThatMustNotWaitIsAnsweredFromMemoryOrRefused) {
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  CheckpointStore fresh(root_);  // nothing in memory yet
  ASSERT_TRUE(fresh.Init().ok());
  {
    common::NoWaitScope no_wait;
    auto refused = fresh.Read(kId1);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
    EXPECT_TRUE(no_wait.wanted_to_wait());
  }
  ExpectSame(ReadOk(fresh, kId1), Full(kId1));  // read from the file, kept
  common::NoWaitScope no_wait;
  ExpectSame(ReadOk(fresh, kId1), Full(kId1));
  EXPECT_FALSE(no_wait.wanted_to_wait()) << "answered from memory";
}

TEST_F(CheckpointStoreTest, AtomicWriteLeavesOnlyTheFileWithMode0600) {
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  EXPECT_THAT(DirEntries(store_->Directory()), ElementsAre(kId1));
  struct stat st;
  ASSERT_EQ(::stat(Path(kId1).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(ReadFile(Path(kId1)), EncodeCheckpoint(Full(kId1)));
}

TEST_F(CheckpointStoreTest, InitRemovesStaleTempFiles) {
  WriteFile(Path(kId1 + ".tmp"), "{half");
  ASSERT_TRUE(store_->Init().ok());
  EXPECT_FALSE(Exists(Path(kId1 + ".tmp")));
}

TEST_F(CheckpointStoreTest, MissingIsNotFound) {
  auto read = store_->Read(kId1);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CheckpointStoreTest, SecondInstanceReadsWhatFirstWrote) {
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  CheckpointStore restarted(root_);
  ASSERT_TRUE(restarted.Init().ok());
  auto read = restarted.Read(kId1);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSame(*read, Full(kId1));
  EXPECT_THAT(restarted.List(), ElementsAre(kId1));
}

TEST_F(CheckpointStoreTest, ReadIsServedFromMemoryAfterFirstRead) {
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  ASSERT_TRUE(store_->Read(kId1).ok());
  ::unlink(Path(kId1).c_str());  // behind the store's back
  EXPECT_TRUE(store_->Read(kId1).ok());
}

class CheckpointCorruptTest : public CheckpointStoreTest, public ::testing::WithParamInterface<std::string> {};

std::string Mangle(const std::string& how) {
  std::string good = EncodeCheckpoint(Full(kId1));
  if (how == "bad_json") return "not json at all";
  if (how == "truncated") return good.substr(0, good.size() - 20);
  if (how == "empty") return "";
  if (how == "flipped_checksum") {
    json doc = json::parse(good);
    std::string sum = doc["checksum"];
    sum.back() = sum.back() == '0' ? '1' : '0';
    doc["checksum"] = sum;
    return doc.dump();
  }
  if (how == "flipped_data") {
    json doc = json::parse(good);
    doc["data"]["host_network"] = true;
    return doc.dump();
  }
  if (how == "foreign_version") {
    json doc = json::parse(good);
    doc["version"] = "dockershim/v9";
    return doc.dump();
  }
  if (how == "other_sandbox") return EncodeCheckpoint(Full(kId2));  // stored under the wrong name
  return good;
}

TEST_P(CheckpointCorruptTest, IsNotFoundAndSetAside) {
  WriteFile(Path(kId1), Mangle(GetParam()));
  auto read = store_->Read(kId1);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound) << read.status();
  EXPECT_FALSE(Exists(Path(kId1)));
  EXPECT_TRUE(Exists(Path(kId1 + ".corrupt")));
  EXPECT_EQ(ReadFile(Path(kId1 + ".corrupt")), Mangle(GetParam()));
  // Still not found the second time (nothing cached), and nothing listed.
  EXPECT_EQ(store_->Read(kId1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(store_->List(), IsEmpty());
  // The store keeps working, also for the same ID.
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  ExpectSame(ReadOk(*store_, kId1), Full(kId1));
  EXPECT_THAT(store_->List(), ElementsAre(kId1));
}

INSTANTIATE_TEST_SUITE_P(CheckpointCases, CheckpointCorruptTest,
                         ::testing::Values("bad_json", "truncated", "empty", "flipped_checksum", "flipped_data",
                                           "foreign_version", "other_sandbox"));

TEST_F(CheckpointStoreTest, CorruptFilesAreSetAsideByList) {
  ASSERT_TRUE(store_->Write(Full(kId2)).ok());
  WriteFile(Path(kId1), "{\"version\":");
  EXPECT_THAT(store_->List(), ElementsAre(kId2));
  EXPECT_TRUE(Exists(Path(kId1 + ".corrupt")));
}

TEST_F(CheckpointStoreTest, SymlinkIsSetAside) {
  WriteFile(root_ + "/elsewhere", EncodeCheckpoint(Full(kId1)));
  ASSERT_EQ(::symlink((root_ + "/elsewhere").c_str(), Path(kId1).c_str()), 0);
  EXPECT_EQ(store_->Read(kId1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Exists(Path(kId1 + ".corrupt")));
  EXPECT_TRUE(Exists(root_ + "/elsewhere"));
}

// What cri-dockerd's PodSandboxCheckpoint marshals to (core/checkpoint.go).
constexpr char kCriDockerdCheckpoint[] =
    R"({"version":"v1","name":"web-0","namespace":"prod","data":{"port_mappings":[)"
    R"({"protocol":"tcp","container_port":80,"host_port":8080},)"
    R"({"protocol":"udp","container_port":53,"host_port":53,"host_ip":"127.0.0.1"}]},"checksum":1432578213})";

TEST_F(CheckpointStoreTest, ImportsCriDockerdCheckpoint) {
  WriteFile(Path(kId1), kCriDockerdCheckpoint);
  auto read = store_->Read(kId1);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->sandbox_id, kId1);
  EXPECT_EQ(read->name, "web-0");
  EXPECT_EQ(read->namespace_, "prod");
  EXPECT_FALSE(read->host_network);
  ASSERT_EQ(read->port_mappings.size(), 2u);
  EXPECT_EQ(read->port_mappings[0].protocol, "tcp");
  EXPECT_EQ(read->port_mappings[0].container_port, 80);
  EXPECT_EQ(read->port_mappings[0].host_port, 8080);
  EXPECT_EQ(read->port_mappings[0].host_ip, "");
  EXPECT_EQ(read->port_mappings[1].protocol, "udp");
  EXPECT_EQ(read->port_mappings[1].host_ip, "127.0.0.1");
  EXPECT_EQ(read->network_plugin, "cni");
  EXPECT_EQ(read->network_name, "");
  EXPECT_EQ(read->ip, "");
  EXPECT_FALSE(read->network_torn_down);
  // Left in place, untouched, so the node can go back to cri-dockerd.
  EXPECT_EQ(ReadFile(Path(kId1)), kCriDockerdCheckpoint);
  EXPECT_FALSE(Exists(Path(kId1 + ".corrupt")));
  EXPECT_THAT(store_->List(), ElementsAre(kId1));
  // A new instance imports it again.
  CheckpointStore restarted(root_);
  EXPECT_TRUE(restarted.Read(kId1).ok());
  // Writing replaces it with our format.
  SandboxCheckpoint updated = *read;
  updated.network_torn_down = true;
  ASSERT_TRUE(store_->Write(updated).ok());
  CheckpointStore again(root_);
  ExpectSame(ReadOk(again, kId1), updated);
}

TEST_F(CheckpointStoreTest, ImportsCriDockerdHostNetworkCheckpoint) {
  WriteFile(Path(kId1), R"({"version":"v1","name":"h","namespace":"kube-system","data":{"host_network":true},"checksum":1})");
  auto read = store_->Read(kId1);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->host_network);
  EXPECT_THAT(read->port_mappings, IsEmpty());
}

TEST_F(CheckpointStoreTest, MalformedCriDockerdCheckpointIsLeftWhereCriDockerdLooks) {
  const std::string malformed =
      R"({"version":"v1","name":"p","namespace":"n","data":{"port_mappings":"x"},"checksum":1})";
  WriteFile(Path(kId1), malformed);
  auto read = store_->Read(kId1);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(read.status().message(), HasSubstr("cri-dockerd checkpoint"));
  EXPECT_EQ(ReadFile(Path(kId1)), malformed);
  EXPECT_FALSE(Exists(Path(kId1 + ".corrupt")));
  EXPECT_THAT(store_->List(), IsEmpty());
  EXPECT_EQ(store_->Read(kId1).status().code(), absl::StatusCode::kNotFound);
  // Our write replaces it (the shared directory's rule), and it reads as ours.
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  CheckpointStore restarted(root_);
  ExpectSame(ReadOk(restarted, kId1), Full(kId1));
}

TEST_F(CheckpointStoreTest, AdoptKeepsACriDockerdFileOfTheSharedDirectoryInMemoryOnly) {
  WriteFile(Path(kId1), kCriDockerdCheckpoint);
  SandboxCheckpoint adopted = ReadOk(*store_, kId1);
  EXPECT_EQ(adopted.adopted_from, kAdoptedFromCriDockerd);
  adopted.ip = "10.244.0.9";
  auto written = store_->Adopt(adopted);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_FALSE(*written);
  EXPECT_EQ(ReadFile(Path(kId1)), kCriDockerdCheckpoint);
  EXPECT_EQ(ReadOk(*store_, kId1).ip, "10.244.0.9");
  EXPECT_THAT(DirEntries(store_->Directory()), ElementsAre(kId1));

  // No file of cri-dockerd's: written.
  SandboxCheckpoint other = Full(kId2);
  written = store_->Adopt(other);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(*written);
  CheckpointStore restarted(root_);
  ExpectSame(ReadOk(restarted, kId2), other);
}

TEST_F(CheckpointStoreTest, AdoptKeepsInMemoryWhatItCannotWrite) {
  std::system(("rm -rf '" + store_->Directory() + "'").c_str());
  auto written = store_->Adopt(Full(kId1));
  EXPECT_FALSE(written.ok());
  EXPECT_THAT(written.status().message(), HasSubstr("write checkpoint"));
  ExpectSame(ReadOk(*store_, kId1), Full(kId1));
}

// cri-dockerd's own directory beside ours.
class CriDockerdDirectoryTest : public CheckpointStoreTest {
 protected:
  void SetUp() override {
    CheckpointStoreTest::SetUp();
    cri_dockerd_root_ = root_ + "/cri-dockerd";
    ASSERT_EQ(::mkdir(cri_dockerd_root_.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir((cri_dockerd_root_ + "/sandbox").c_str(), 0700), 0);
    store_ = std::make_unique<CheckpointStore>(root_ + "/dockershim", cri_dockerd_root_);
    ASSERT_TRUE(store_->Init().ok());
  }
  std::string Theirs(const std::string& name) const { return cri_dockerd_root_ + "/sandbox/" + name; }

  std::string cri_dockerd_root_;
};

TEST_F(CriDockerdDirectoryTest, ImportsReadOnlyAndWritesOursBeside) {
  WriteFile(Theirs(kId1), kCriDockerdCheckpoint);
  SandboxCheckpoint read = ReadOk(*store_, kId1);
  EXPECT_EQ(read.name, "web-0");
  EXPECT_EQ(read.port_mappings.size(), 2u);
  EXPECT_EQ(read.adopted_from, kAdoptedFromCriDockerd);
  EXPECT_THAT(DirEntries(store_->Directory()), IsEmpty()) << "nothing written by a read";
  EXPECT_THAT(store_->List(), ElementsAre(kId1));

  read.ip = "10.244.0.9";
  auto written = store_->Adopt(read);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(*written);
  EXPECT_EQ(ReadFile(Theirs(kId1)), kCriDockerdCheckpoint);
  CheckpointStore restarted(root_ + "/dockershim", cri_dockerd_root_);
  ExpectSame(ReadOk(restarted, kId1), read);  // ours first
  EXPECT_THAT(restarted.List(), ElementsAre(kId1));

  ASSERT_TRUE(restarted.Remove(kId1).ok());
  EXPECT_FALSE(Exists(Path(kId1)));
  EXPECT_FALSE(Exists(Theirs(kId1)));
  EXPECT_EQ(restarted.Read(kId1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(restarted.List(), IsEmpty());
}

TEST_F(CriDockerdDirectoryTest, ListsBothDirectories) {
  WriteFile(Theirs(kId1), kCriDockerdCheckpoint);
  ASSERT_TRUE(store_->Write(Full(kId2)).ok());
  WriteFile(Theirs(".cri-dockerd-tmp1"), "junk");
  EXPECT_THAT(store_->List(), ElementsAre(kId1, kId2));
}

TEST_F(CriDockerdDirectoryTest, AnUnusableFileOfCriDockerdsIsLeftAlone) {
  for (const std::string& text : {std::string("{not json"), std::string(R"({"version":"v1","data":[],"checksum":1})")}) {
    SCOPED_TRACE(text);
    WriteFile(Theirs(kId1), text);
    CheckpointStore store(root_ + "/dockershim", cri_dockerd_root_);
    ASSERT_TRUE(store.Init().ok());
    auto read = store.Read(kId1);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(read.status().message(), HasSubstr(Theirs(kId1)));
    EXPECT_THAT(store.List(), IsEmpty());
    EXPECT_EQ(ReadFile(Theirs(kId1)), text);
    EXPECT_THAT(DirEntries(cri_dockerd_root_ + "/sandbox"), ElementsAre(kId1)) << "not moved aside";
    // Remembered: not parsed (nor logged) again, even once the file is fixed.
    WriteFile(Theirs(kId1), kCriDockerdCheckpoint);
    EXPECT_THAT(store.Read(kId1).status().message(), HasSubstr("logged before"));
    // Its pod's removal takes it.
    ASSERT_TRUE(store.Remove(kId1).ok());
    EXPECT_FALSE(Exists(Theirs(kId1)));
  }
}

TEST_F(CriDockerdDirectoryTest, ReadsOurFormatLeftThereByAnOlderSetup) {
  // Written when --cri-dockerd-root-directory was an alias of --root-directory.
  WriteFile(Theirs(kId1), EncodeCheckpoint(Full(kId1)));
  ExpectSame(ReadOk(*store_, kId1), Full(kId1));
  EXPECT_THAT(DirEntries(store_->Directory()), IsEmpty());
}

TEST_F(CriDockerdDirectoryTest, SameDirectoryUnderTwoNamesIsShared) {
  ASSERT_EQ(::symlink((root_ + "/dockershim").c_str(), (root_ + "/link").c_str()), 0);
  for (const std::string& other : {root_ + "/dockershim/", root_ + "/link"}) {
    SCOPED_TRACE(other);
    CheckpointStore store(root_ + "/dockershim", other);
    ASSERT_TRUE(store.Init().ok());
    WriteFile(Path(kId1), kCriDockerdCheckpoint);
    SandboxCheckpoint read = ReadOk(store, kId1);
    read.ip = "10.244.0.9";
    auto written = store.Adopt(read);
    ASSERT_TRUE(written.ok());
    EXPECT_FALSE(*written) << "memory only";
    EXPECT_EQ(ReadFile(Path(kId1)), kCriDockerdCheckpoint);
  }
}

// The files below are those that cri-dockerd v0.4.3 (the release binary, d969e29) wrote
// in <its root>/sandbox/ for `crictl runp` of these pod configs on Docker 28.5, byte for
// byte: its checksums are the expected values (EncodeCriDockerdCheckpoint computes them).
struct CriDockerdFile {
  const char* what;
  SandboxCheckpoint pod;
  const char* text;
};

SandboxCheckpoint Pod(const std::string& name, std::vector<network::PortMapping> ports, bool host_network = false) {
  SandboxCheckpoint c;
  c.sandbox_id = kId1;
  c.name = name;
  c.namespace_ = "hpb";
  c.uid = "uid-" + name;  // not in cri-dockerd's format
  c.port_mappings = std::move(ports);
  c.host_network = host_network;
  c.ip = "10.98.0.2";  // nor this
  return c;
}

const std::vector<CriDockerdFile>& RealCriDockerdFiles() {
  static const auto* files = new std::vector<CriDockerdFile>{
      {"no port mapping", Pod("fix-none", {}),
       R"({"version":"v1","name":"fix-none","namespace":"hpb","data":{},"checksum":2305795928})"},
      {"one hostPort", Pod("fix-one", {{"tcp", 80, 18090, ""}}),
       R"({"version":"v1","name":"fix-one","namespace":"hpb","data":{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":18090}]},"checksum":1336085961})"},
      {"each protocol, a host IP, a container port only",
       Pod("fix-multi",
           {{"tcp", 80, 18091, "127.0.0.1"}, {"udp", 53, 18092, ""}, {"sctp", 9999, 18093, ""}, {"tcp", 8080, 0, ""}}),
       R"({"version":"v1","name":"fix-multi","namespace":"hpb","data":{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":18091,"host_ip":"127.0.0.1"},{"protocol":"udp","container_port":53,"host_port":18092},{"protocol":"sctp","container_port":9999,"host_port":18093},{"protocol":"tcp","container_port":8080,"host_port":0}]},"checksum":4177365745})"},
      {"host network", Pod("fix-hostnet", {{"tcp", 18094, 18094, ""}}, /*host_network=*/true),
       R"({"version":"v1","name":"fix-hostnet","namespace":"hpb","data":{"port_mappings":[{"protocol":"tcp","container_port":18094,"host_port":18094}],"host_network":true},"checksum":3875010998})"},
  };
  return *files;
}

TEST(CriDockerdCheckpointTest, EncodesAsCriDockerdWritesItsOwn) {
  for (const CriDockerdFile& file : RealCriDockerdFiles()) {
    EXPECT_EQ(EncodeCriDockerdCheckpoint(file.pod), file.text) << file.what;
  }
}

TEST(CriDockerdCheckpointTest, ReadsBackWhatItWrites) {
  for (const CriDockerdFile& file : RealCriDockerdFiles()) {
    absl::StatusOr<SandboxCheckpoint> read = DecodeCriDockerdCheckpoint(file.text, kId1);
    ASSERT_TRUE(read.ok()) << file.what << ": " << read.status();
    EXPECT_EQ(read->name, file.pod.name) << file.what;
    EXPECT_EQ(read->namespace_, file.pod.namespace_) << file.what;
    EXPECT_EQ(read->port_mappings, file.pod.port_mappings) << file.what;
    EXPECT_EQ(read->host_network, file.pod.host_network) << file.what;
    EXPECT_EQ(read->adopted_from, kAdoptedFromCriDockerd) << file.what;
    EXPECT_EQ(EncodeCriDockerdCheckpoint(*read), file.text) << file.what;
  }
  EXPECT_FALSE(DecodeCriDockerdCheckpoint(EncodeCheckpoint(Pod("ours", {})), kId1).ok());
}

// Every field of the hashed data changes the checksum (the table above fixes its value).
TEST(CriDockerdCheckpointTest, TheChecksumCoversThePortsAndTheHostNetworkOnly) {
  auto checksum = [](const SandboxCheckpoint& c) {
    return json::parse(EncodeCriDockerdCheckpoint(c))["checksum"].get<uint64_t>();
  };
  const SandboxCheckpoint base = Pod("p", {{"tcp", 80, 8080, ""}});
  std::vector<SandboxCheckpoint> changed(6, base);
  changed[0].port_mappings[0].protocol = "udp";
  changed[1].port_mappings[0].container_port = 81;
  changed[2].port_mappings[0].host_port = 8081;
  changed[3].port_mappings[0].host_ip = "10.0.0.1";
  changed[4].host_network = true;
  changed[5].port_mappings.push_back({"tcp", 80, 8080, ""});
  for (size_t i = 0; i < changed.size(); ++i) EXPECT_NE(checksum(changed[i]), checksum(base)) << i;
  SandboxCheckpoint renamed = base;
  renamed.name = "q";
  renamed.namespace_ = "other";
  EXPECT_EQ(checksum(renamed), checksum(base));  // cri-dockerd hashes the data only
}

TEST_F(CheckpointStoreTest, RemoveIsIdempotentAndDropsCache) {
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  ASSERT_TRUE(store_->Read(kId1).ok());
  EXPECT_TRUE(store_->Remove(kId1).ok());
  EXPECT_FALSE(Exists(Path(kId1)));
  EXPECT_EQ(store_->Read(kId1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->Remove(kId1).ok());
  EXPECT_TRUE(store_->Remove(kId2).ok());
}

TEST_F(CheckpointStoreTest, ListReturnsSortedIdsAndSkipsOtherFiles) {
  EXPECT_THAT(store_->List(), IsEmpty());
  ASSERT_TRUE(store_->Write(Full(kId2)).ok());
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  WriteFile(Path("x.tmp"), "junk");
  WriteFile(Path("y.corrupt"), "junk");
  WriteFile(Path(".cri-dockerd-tmp123"), "junk");
  ASSERT_EQ(::mkdir(Path("subdir").c_str(), 0700), 0);
  EXPECT_THAT(store_->List(), ElementsAre(kId1, kId2));
  ASSERT_TRUE(store_->Remove(kId2).ok());
  EXPECT_THAT(store_->List(), ElementsAre(kId1));
}

// Sets the directory's mtime `ago` in the past, as if nothing changed in it since.
void AgeDirectory(const std::string& dir, absl::Duration ago) {
  const timespec then = absl::ToTimespec(absl::Now() - ago);
  const timespec times[2] = {then, then};
  ASSERT_EQ(::utimensat(AT_FDCWD, dir.c_str(), times, 0), 0) << std::strerror(errno);
}

TEST_F(CheckpointStoreTest, IdsSeeWhatOthersAddAndRemoveAtOnceAndLater) {
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  EXPECT_THAT(*store_->Ids(), ElementsAre(kId1));
  // In the mtime's tick of the last read: read again.
  WriteFile(Path(kId2), EncodeCheckpoint(Full(kId2)));
  EXPECT_THAT(*store_->Ids(), ElementsAre(kId1, kId2));
  // Long after: kept, until the directory changes.
  AgeDirectory(store_->Directory(), absl::Seconds(10));
  EXPECT_THAT(*store_->Ids(), ElementsAre(kId1, kId2));
  ASSERT_EQ(::unlink(Path(kId1).c_str()), 0);
  EXPECT_THAT(*store_->Ids(), ElementsAre(kId2));
  ASSERT_TRUE(store_->Remove(kId2).ok());
  EXPECT_THAT(*store_->Ids(), IsEmpty());
}

TEST_F(CheckpointStoreTest, IdsReadADirectoryAgainOnlyWhenItsMtimeMoved) {
  ASSERT_TRUE(store_->Write(Full(kId1)).ok());
  AgeDirectory(store_->Directory(), absl::Seconds(10));
  struct stat before {};
  ASSERT_EQ(::stat(store_->Directory().c_str(), &before), 0);
  EXPECT_THAT(*store_->Ids(), ElementsAre(kId1));
  // A file slipped in with the mtime put back: the read kept is answered.
  WriteFile(Path(kId2), EncodeCheckpoint(Full(kId2)));
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, store_->Directory().c_str(), times, 0), 0);
  EXPECT_THAT(*store_->Ids(), ElementsAre(kId1));
  AgeDirectory(store_->Directory(), absl::Seconds(5));
  EXPECT_THAT(*store_->Ids(), ElementsAre(kId1, kId2));
}

TEST_F(CheckpointStoreTest, RejectsPathTraversalIds) {
  const std::vector<std::string> ids = {"",      "../etc/passwd", "a/b",     "/abs",      ".",
                                       "..",    ".hidden",       "x.tmp",   "x.corrupt", std::string(300, 'a'),
                                       std::string("a\0b", 3)};
  for (const std::string& id : ids) {
    SandboxCheckpoint c = Full(id);
    EXPECT_EQ(store_->Write(c).code(), absl::StatusCode::kInvalidArgument) << id;
    EXPECT_EQ(store_->Read(id).status().code(), absl::StatusCode::kInvalidArgument) << id;
    EXPECT_EQ(store_->Remove(id).code(), absl::StatusCode::kInvalidArgument) << id;
  }
  EXPECT_THAT(DirEntries(store_->Directory()), IsEmpty());
  EXPECT_THAT(DirEntries(root_), ElementsAre("sandbox"));
}

TEST_F(CheckpointStoreTest, WriteFailsCleanlyWhenDirectoryIsGone) {
  std::system(("rm -rf '" + store_->Directory() + "'").c_str());
  absl::Status s = store_->Write(Full(kId1));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("write checkpoint"));
  EXPECT_EQ(store_->Read(kId1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(store_->List(), IsEmpty());
}

TEST_F(CheckpointStoreTest, ConcurrentWritersAndReaders) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 12; ++i) {
        std::string id = std::string(62, 'c') + std::to_string(t) + std::to_string(i % 5);
        SandboxCheckpoint c = Full(id);
        c.ip = "10.0." + std::to_string(t) + "." + std::to_string(i);
        EXPECT_TRUE(store_->Write(c).ok());
        EXPECT_TRUE(store_->Read(id).ok());
        if (i % 7 == 0) {
          EXPECT_TRUE(store_->Remove(id).ok());
        }
        store_->List();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& name : DirEntries(store_->Directory())) EXPECT_THAT(name, ::testing::Not(HasSubstr(".tmp")));
  CheckpointStore fresh(root_);
  for (const auto& id : fresh.List()) EXPECT_TRUE(fresh.Read(id).ok());
}

// Writers of one sandbox are serialized (its temp file, its renames and the cache in
// one order) while other sandboxes' writes go on beside them: what the cache holds at the
// end is what the file holds.
TEST_F(CheckpointStoreTest, ConcurrentWritersOfOneSandboxLeaveTheFileAndTheCacheAlike) {
  const std::string id(64, 'e');
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t, &id] {
      for (int i = 0; i < 20; ++i) {
        SandboxCheckpoint c = Full(i % 2 == 0 ? id : std::string(63, 'f') + std::to_string(t));
        c.ip = "10.1." + std::to_string(t) + "." + std::to_string(i);
        EXPECT_TRUE(store_->Write(c).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& name : DirEntries(store_->Directory())) EXPECT_THAT(name, ::testing::Not(HasSubstr(".tmp")));
  auto cached = store_->Read(id);
  ASSERT_TRUE(cached.ok());
  CheckpointStore fresh(root_);
  auto on_disk = fresh.Read(id);
  ASSERT_TRUE(on_disk.ok()) << on_disk.status();
  EXPECT_EQ(*on_disk, *cached);
}

}  // namespace
}  // namespace shim
