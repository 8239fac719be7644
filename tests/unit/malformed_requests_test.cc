// Every RPC of runtime.v1 RuntimeService and ImageService, through the real gRPC
// services in-process on the fake Docker client, with malformed requests: empty ones,
// nonsense IDs, IDs of the wrong kind and huge maps. Each answers the code the table
// below gives for it, with a message, and leaves Docker, the network and the state
// directory as they were. The RPCs come from the service descriptors: one missing from
// the table fails the test.
#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shim/cri_service.h"
#include "shim/events/event_hub.h"
#include "shim/grpc_limits.h"
#include "shim/grpc_services.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;
using testing_fakes::FakeDockerClient;
using testing_fakes::FakeNetwork;
using Code = grpc::StatusCode;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";

// What each RPC may answer, per kind of malformed request. Letters: I INVALID_ARGUMENT,
// N NOT_FOUND, F FAILED_PRECONDITION, R RESOURCE_EXHAUSTED, O OK, D DEADLINE_EXCEEDED
// (the endless event stream). "-": the request has no such field, so that case cannot apply
// (checked: the builder finds nothing to set).
struct Allowed {
  const char* empty;
  const char* bad_id;      // "../../../../etc/passwd", "a/b", "?x", control characters, 1 MB
  const char* wrong_kind;  // a sandbox ID where a container's goes and vice versa; a container ID as image
  const char* huge;        // every label/annotation/selector map with 10k entries of 200 bytes
};

const std::map<std::string, Allowed>& Table() {
  static const auto* table = new std::map<std::string, Allowed>{
      // RuntimeService. Stop and Remove are idempotent: an ID that names no sandbox is OK
      // (and the container it names is left alone: the snapshot checks it); a sandbox's
      // ID to StopContainer/RemoveContainer is INVALID_ARGUMENT, as it names a container.
      {"Version", {"O", "-", "-", "-"}},
      {"RunPodSandbox", {"I", "I", "-", "I"}},
      {"StopPodSandbox", {"I", "O", "O", "-"}},
      {"RemovePodSandbox", {"I", "O", "O", "-"}},
      {"PodSandboxStatus", {"I", "N", "N", "-"}},
      {"ListPodSandbox", {"O", "O", "O", "O"}},  // a filter matching nothing lists nothing
      {"StreamPodSandboxes", {"O", "O", "O", "O"}},
      {"CreateContainer", {"I", "N", "N", "I"}},
      {"StartContainer", {"I", "N", "N", "-"}},
      {"StopContainer", {"I", "O", "I", "-"}},
      {"RemoveContainer", {"I", "O", "I", "-"}},
      {"ListContainers", {"O", "O", "O", "O"}},
      {"StreamContainers", {"O", "O", "O", "O"}},
      {"ContainerStatus", {"I", "N", "N", "-"}},
      {"UpdateContainerResources", {"I", "N", "N", "O"}},  // its annotations are not kept
      {"ReopenContainerLog", {"I", "N", "N", "-"}},
      {"ExecSync", {"I", "N", "N", "-"}},
      {"Exec", {"I", "N", "N", "-"}},
      {"Attach", {"I", "N", "N", "-"}},
      {"PortForward", {"I", "N", "N", "-"}},
      {"ContainerStats", {"I", "N", "N", "-"}},
      {"ListContainerStats", {"O", "O", "O", "O"}},
      {"StreamContainerStats", {"O", "O", "O", "O"}},
      {"PodSandboxStats", {"I", "N", "N", "-"}},
      {"ListPodSandboxStats", {"O", "O", "O", "O"}},
      {"StreamPodSandboxStats", {"O", "O", "O", "O"}},
      {"UpdateRuntimeConfig", {"O", "-", "-", "-"}},
      {"Status", {"O", "-", "-", "-"}},
      {"CheckpointContainer", {"I", "IN", "IN", "-"}},  // no location: INVALID_ARGUMENT first
      {"GetContainerEvents", {"D", "-", "-", "-"}},
      {"ListMetricDescriptors", {"O", "-", "-", "-"}},
      {"ListPodSandboxMetrics", {"O", "-", "-", "-"}},
      {"StreamPodSandboxMetrics", {"O", "-", "-", "-"}},
      {"RuntimeConfig", {"O", "-", "-", "-"}},
      {"UpdatePodSandboxResources", {"I", "N", "N", "-"}},
      // ImageService. "a/b" is a well-formed reference (of nothing here); a container ID
      // reads as an image ID; the huge case asks for an image Docker lacks.
      {"ListImages", {"O", "IO", "O", "O"}},
      {"StreamImages", {"O", "IO", "O", "O"}},
      {"ImageStatus", {"I", "IO", "O", "O"}},
      {"PullImage", {"I", "IN", "I", "N"}},
      {"RemoveImage", {"I", "IO", "O", "O"}},
      {"ImageFsInfo", {"O", "-", "-", "-"}},
  };
  return *table;
}

Code CodeOf(char letter) {
  switch (letter) {
    case 'I': return Code::INVALID_ARGUMENT;
    case 'N': return Code::NOT_FOUND;
    case 'F': return Code::FAILED_PRECONDITION;
    case 'R': return Code::RESOURCE_EXHAUSTED;
    case 'O': return Code::OK;
    case 'D': return Code::DEADLINE_EXCEEDED;
  }
  ADD_FAILURE() << "unknown code letter " << letter;
  return Code::UNKNOWN;
}

std::vector<const pb::MethodDescriptor*> AllMethods() {
  std::vector<const pb::MethodDescriptor*> methods;
  for (const char* name : {"runtime.v1.RuntimeService", "runtime.v1.ImageService"}) {
    const pb::ServiceDescriptor* service = pb::DescriptorPool::generated_pool()->FindServiceByName(name);
    EXPECT_NE(service, nullptr) << name;
    if (!service) continue;
    for (int i = 0; i < service->method_count(); ++i) methods.push_back(service->method(i));
  }
  return methods;
}

// Nested messages the builders go into: where the IDs, names and maps of a request are.
bool Enters(const pb::FieldDescriptor& field) {
  static const std::set<std::string> names = {"filter", "image", "config", "metadata", "sandbox_config"};
  return field.type() == pb::FieldDescriptor::TYPE_MESSAGE && !field.is_repeated() && names.contains(field.name());
}

// Calls `fn` on every singular string field of `m` and of the messages Enters() takes,
// creating those; returns how many times `fn` changed something.
int ForEachString(pb::Message& m, const std::function<bool(pb::Message&, const pb::FieldDescriptor&)>& fn) {
  int changed = 0;
  const pb::Descriptor* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor& field = *d->field(i);
    if (Enters(field)) {
      changed += ForEachString(*m.GetReflection()->MutableMessage(&m, &field), fn);
    } else if (field.type() == pb::FieldDescriptor::TYPE_STRING && !field.is_repeated()) {
      changed += fn(m, field) ? 1 : 0;
    }
  }
  return changed;
}

// Fills every map<string, string> field (labels, annotations, selectors) of `m` and of
// the messages Enters() takes with 10k entries of 100-byte keys and values.
int FillMaps(pb::Message& m) {
  int filled = 0;
  const pb::Descriptor* d = m.GetDescriptor();
  const pb::Reflection& r = *m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor& field = *d->field(i);
    if (field.is_map()) {
      const pb::Descriptor* entry = field.message_type();
      if (entry->map_key()->type() != pb::FieldDescriptor::TYPE_STRING ||
          entry->map_value()->type() != pb::FieldDescriptor::TYPE_STRING)
        continue;
      for (int k = 0; k < 10000; ++k) {
        pb::Message* e = r.AddMessage(&m, &field);
        e->GetReflection()->SetString(e, entry->map_key(), absl::StrCat(k, std::string(95, 'k')));
        e->GetReflection()->SetString(e, entry->map_value(), std::string(100, 'v'));
      }
      ++filled;
    } else if (Enters(field)) {
      filled += FillMaps(*r.MutableMessage(&m, &field));
    }
  }
  return filled;
}

bool IsIdField(const pb::FieldDescriptor& field) {
  return field.name() == "container_id" || field.name() == "pod_sandbox_id" || field.name() == "id" ||
         (field.name() == "image" && field.containing_type()->name() == "ImageSpec");
}
bool IsNameField(const pb::FieldDescriptor& field) {
  return field.containing_type()->name().ends_with("Metadata") &&
         (field.name() == "name" || field.name() == "namespace" || field.name() == "uid");
}

class MalformedRequestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/malformed_requests_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    docker_.AddImage({kPause});
    docker_.AddImage({kBusybox});
    Options o;
    o.root_directory = root_ + "/state";
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    o.streaming = &issuer_;
    service_ = std::make_unique<CriService>(o, docker_, network_);
    ASSERT_TRUE(service_->Init().ok());

    pod_.mutable_metadata()->set_name("web");
    pod_.mutable_metadata()->set_namespace_("prod");
    pod_.mutable_metadata()->set_uid("uid-7");
    pod_.mutable_linux();
    v1::RunPodSandboxRequest run;
    *run.mutable_config() = pod_;
    auto sandbox = service_->RunPodSandbox(ctx_, run);
    ASSERT_TRUE(sandbox.ok()) << sandbox.status();
    sandbox_id_ = sandbox->pod_sandbox_id();
    v1::CreateContainerRequest create;
    create.set_pod_sandbox_id(sandbox_id_);
    create.mutable_config()->mutable_metadata()->set_name("app");
    create.mutable_config()->mutable_image()->set_image(kBusybox);
    *create.mutable_sandbox_config() = pod_;
    auto created = service_->CreateContainer(ctx_, create);
    ASSERT_TRUE(created.ok()) << created.status();
    container_id_ = created->container_id();
    v1::StartContainerRequest start;
    start.set_container_id(container_id_);
    ASSERT_TRUE(service_->StartContainer(ctx_, start).ok());

    events::HubOptions hub_options;
    hub_options.docker_socket_path = root_ + "/no-dockerd.sock";  // no events ever come
    hub_ = std::make_unique<events::EventHub>(
        docker_, hub_options, [this](const events::CriEvent& e) { return service_->BuildContainerEvent(ctx_, e); });
    runtime_ = std::make_unique<RuntimeServiceImpl>(*service_, GrpcOptions{}, dispatcher_, hub_.get());
    images_ = std::make_unique<ImageServiceImpl>(*service_, GrpcOptions{}, dispatcher_);
    grpc::ServerBuilder builder;
    ApplyGrpcLimits(builder);
    builder.RegisterService(runtime_.get());
    builder.RegisterService(images_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    args.SetMaxReceiveMessageSize(-1);
    stub_ = std::make_unique<grpc::GenericStub>(server_->InProcessChannel(args));
    before_ = Snapshot();
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    if (hub_) hub_->Stop();
    server_.reset();
    service_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // Records the URLs' requests; nothing serves them.
  class Issuer final : public streaming::UrlIssuer {
   public:
    absl::StatusOr<std::string> IssueUrl(streaming::Request) override { return std::string("http://127.0.0.1:1/x"); }
  };

  // What a malformed request must leave alone: Docker's containers and their states,
  // the network attachments, the state directory's files and the images.
  std::string Snapshot() {
    std::string s;
    for (const auto& [id, c] : docker_.Containers()) absl::StrAppend(&s, id, "=", c.inspect.state.status, ";");
    {
      std::lock_guard lock(network_.mu_);
      absl::StrAppend(&s, "|net:", network_.attached.size(), "|");
    }
    for (const auto& entry : fs::recursive_directory_iterator(root_ + "/state"))
      absl::StrAppend(&s, entry.path().string(), ";");
    absl::StrAppend(&s, "|images:", docker_.HasImage(kPause), docker_.HasImage(kBusybox));
    return s;
  }

  // The smallest request that reaches the RPC's lookups: what validation would
  // refuse before (a config, a command, a stream) is given.
  static void Complete(const std::string& rpc, pb::Message& m) {
    if (rpc == "RunPodSandbox") {
      auto& r = static_cast<v1::RunPodSandboxRequest&>(m);
      r.mutable_config()->mutable_metadata()->set_name("sweep");
      r.mutable_config()->mutable_metadata()->set_namespace_("prod");
      r.mutable_config()->mutable_metadata()->set_uid("uid-sweep");
      r.mutable_config()->mutable_linux();
    } else if (rpc == "CreateContainer") {
      auto& r = static_cast<v1::CreateContainerRequest&>(m);
      r.mutable_config()->mutable_metadata()->set_name("sweep");
      r.mutable_config()->mutable_image()->set_image(kBusybox);
      r.mutable_sandbox_config()->mutable_metadata()->set_name("web");
      r.mutable_sandbox_config()->mutable_metadata()->set_namespace_("prod");
      r.mutable_sandbox_config()->mutable_metadata()->set_uid("uid-7");
    } else if (rpc == "ExecSync") {
      static_cast<v1::ExecSyncRequest&>(m).add_cmd("true");
    } else if (rpc == "Exec") {
      auto& r = static_cast<v1::ExecRequest&>(m);
      r.add_cmd("true");
      r.set_stdout(true);
    } else if (rpc == "Attach") {
      static_cast<v1::AttachRequest&>(m).set_stdout(true);
    } else if (rpc == "PortForward") {
      static_cast<v1::PortForwardRequest&>(m).add_port(80);
    } else if (rpc == "UpdateContainerResources") {
      static_cast<v1::UpdateContainerResourcesRequest&>(m).mutable_linux()->set_cpu_shares(512);
    } else if (rpc == "UpdatePodSandboxResources") {
      static_cast<v1::UpdatePodSandboxResourcesRequest&>(m).mutable_overhead()->set_cpu_shares(512);
    }
  }

  static std::unique_ptr<pb::Message> NewRequest(const pb::MethodDescriptor& method) {
    return std::unique_ptr<pb::Message>(
        pb::MessageFactory::generated_factory()->GetPrototype(method.input_type())->New());
  }

  // The call over the wire (unary and server-streaming RPCs alike): the status, with
  // every streamed response read.
  grpc::Status Call(const pb::MethodDescriptor& method, const pb::Message& req, std::string* answer = nullptr) {
    return CallWithBytes(method, req.SerializeAsString(), answer);
  }
  // `answer`: the last response's bytes.
  grpc::Status CallWithBytes(const pb::MethodDescriptor& method, const std::string& bytes,
                             std::string* answer = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(method.name() == "GetContainerEvents" ? 300 : 30000));
    grpc::CompletionQueue cq;
    const std::string path = absl::StrCat("/", method.service()->full_name(), "/", method.name());
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub_->PrepareCall(&ctx, path, &cq);
    void* tag;
    bool ok;
    const auto wait = [&] { return cq.Next(&tag, &ok) && ok; };
    call->StartCall(this);
    if (wait()) {
      grpc::Slice slice(bytes);
      grpc::ByteBuffer request(&slice, 1);
      call->WriteLast(request, grpc::WriteOptions(), this);
      wait();
      grpc::ByteBuffer response;
      for (;;) {
        call->Read(&response, this);
        if (!wait()) break;
        if (answer) {
          std::vector<grpc::Slice> slices;
          answer->clear();
          if (response.Dump(&slices).ok())
            for (const grpc::Slice& s : slices) answer->append(reinterpret_cast<const char*>(s.begin()), s.size());
        }
      }
    }
    grpc::Status status;
    call->Finish(&status, this);
    cq.Next(&tag, &ok);
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    return status;
  }

  // Sends `req` to `method` and checks the answer against `allowed` and that nothing changed.
  void Check(const pb::MethodDescriptor& method, const pb::Message& req, const char* allowed, const std::string& what) {
    SCOPED_TRACE(absl::StrCat(method.name(), " with ", what));
    const grpc::Status status = Call(method, req);
    std::set<Code> codes;
    for (const char* c = allowed; *c; ++c) codes.insert(CodeOf(*c));
    EXPECT_TRUE(codes.contains(status.error_code()))
        << "answered " << status.error_code() << " (want one of \"" << allowed << "\"): " << status.error_message().substr(0, 300);
    if (!status.ok()) {
      EXPECT_FALSE(status.error_message().empty());
      // Cut at 4 KiB, plus the note of what was cut.
      EXPECT_LE(status.error_message().size(), 4096u + 64) << "the message should not echo a huge request";
    }
    EXPECT_EQ(Snapshot(), before_) << "the request changed Docker, the network or the state directory";
  }

  // Runs `build` on each RPC's request; those it sets nothing in must be "-" in the table.
  void Sweep(const char* Allowed::*column, const std::string& what,
             const std::function<int(const std::string& rpc, pb::Message&)>& build) {
    const std::vector<const pb::MethodDescriptor*> methods = AllMethods();
    EXPECT_EQ(methods.size(), 41u);
    for (const pb::MethodDescriptor* method : methods) {
      auto row = Table().find(method->name());
      if (row == Table().end()) {
        ADD_FAILURE() << method->name() << " is not in the table: decide what it answers to malformed requests";
        continue;
      }
      const char* allowed = row->second.*column;
      std::unique_ptr<pb::Message> req = NewRequest(*method);
      const int set = build(method->name(), *req);
      if (std::string(allowed) == "-") {
        EXPECT_EQ(set, 0) << method->name() << ": the table says \"-\" but the request has fields for " << what;
        continue;
      }
      EXPECT_GT(set, 0) << method->name() << ": nothing to set for " << what;
      Check(*method, *req, allowed, what);
    }
  }

  std::string root_;
  FakeDockerClient docker_;
  FakeNetwork network_;
  Issuer issuer_;
  std::unique_ptr<CriService> service_;
  std::unique_ptr<events::EventHub> hub_;
  dispatch::Dispatcher dispatcher_;
  std::unique_ptr<RuntimeServiceImpl> runtime_;
  std::unique_ptr<ImageServiceImpl> images_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::GenericStub> stub_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
  v1::PodSandboxConfig pod_;
  std::string sandbox_id_, container_id_;
  std::string before_;
};

TEST_F(MalformedRequestsTest, TableCoversExactlyTheServicesRpcs) {
  std::set<std::string> names;
  for (const pb::MethodDescriptor* method : AllMethods()) names.insert(method->name());
  EXPECT_EQ(names.size(), 41u);
  for (const auto& [rpc, expect] : Table()) EXPECT_TRUE(names.contains(rpc)) << rpc << " is no RPC of runtime.v1";
}

TEST_F(MalformedRequestsTest, EmptyRequests) {
  Sweep(&Allowed::empty, "an empty request", [](const std::string&, pb::Message&) { return 1; });
}

TEST_F(MalformedRequestsTest, NonsenseIdsAndNames) {
  const std::vector<std::pair<std::string, std::string>> values = {
      {"a path", "../../../../etc/passwd"}, {"a slash", "a/b"},         {"a query", "?x"},
      {"control characters", "id\n\r\t\x01\x7f"}, {"a 1 MB string", std::string(1 << 20, 'x')}};
  for (const auto& [what, value] : values) {
    Sweep(&Allowed::bad_id, what, [&value = value](const std::string& rpc, pb::Message& m) {
      Complete(rpc, m);
      return ForEachString(m, [&](pb::Message& msg, const pb::FieldDescriptor& field) {
        if (!IsIdField(field) && !IsNameField(field)) return false;
        msg.GetReflection()->SetString(&msg, &field, value);
        return true;
      });
    });
  }
}

TEST_F(MalformedRequestsTest, IdsOfTheWrongKind) {
  Sweep(&Allowed::wrong_kind, "IDs of the wrong kind", [this](const std::string& rpc, pb::Message& m) {
    Complete(rpc, m);
    return ForEachString(m, [&](pb::Message& msg, const pb::FieldDescriptor& field) {
      if (!IsIdField(field)) return false;
      const std::string& type = field.containing_type()->name();
      std::string wrong;
      if (field.name() == "container_id") wrong = sandbox_id_;
      if (field.name() == "pod_sandbox_id") wrong = container_id_;
      if (field.name() == "id") wrong = type.starts_with("PodSandbox") ? container_id_ : sandbox_id_;
      if (field.name() == "image") wrong = container_id_;
      msg.GetReflection()->SetString(&msg, &field, wrong);
      return true;
    });
  });
}

TEST_F(MalformedRequestsTest, HugeLabelAndAnnotationMaps) {
  Sweep(&Allowed::huge, "10k-entry maps", [this](const std::string& rpc, pb::Message& m) {
    Complete(rpc, m);
    // Everything else as a well-formed request has it: the real IDs, an image Docker lacks.
    ForEachString(m, [&](pb::Message& msg, const pb::FieldDescriptor& field) {
      if (!IsIdField(field)) return false;
      const std::string& type = field.containing_type()->name();
      std::string id = field.name() == "container_id" ? container_id_ : sandbox_id_;
      if (field.name() == "id" && !type.starts_with("PodSandbox")) id = container_id_;
      if (field.name() == "image") id = "example.com/absent:1";
      msg.GetReflection()->SetString(&msg, &field, id);
      return true;
    });
    return FillMaps(m);
  });
}

TEST_F(MalformedRequestsTest, StopAndRemoveContainerLeaveAPodsInfraContainerAlone) {
  // The sweep's wrong-kind case, spelled out: these once stopped the pod's own container.
  for (const char* rpc : {"StopContainer", "RemoveContainer"}) {
    const pb::MethodDescriptor* method =
        pb::DescriptorPool::generated_pool()->FindMethodByName(absl::StrCat("runtime.v1.RuntimeService.", rpc));
    ASSERT_NE(method, nullptr);
    std::unique_ptr<pb::Message> req = NewRequest(*method);
    req->GetReflection()->SetString(req.get(), req->GetDescriptor()->FindFieldByName("container_id"), sandbox_id_);
    const grpc::Status status = Call(*method, *req);
    EXPECT_EQ(status.error_code(), Code::INVALID_ARGUMENT) << rpc << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr("pod infra container")) << rpc;
  }
  EXPECT_EQ(docker_.Containers().at(sandbox_id_).inspect.state.status, "running");
}

// The relists run on gRPC's raw API (grpc_services.h): what they answer over the wire is
// what the service lists, and bytes that are no request are refused, not guessed at.
TEST_F(MalformedRequestsTest, RelistsOverTheWireAnswerWhatTheServiceListsAndRefuseWhatIsNoRequest) {
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  const pb::MethodDescriptor* pods = pool->FindMethodByName("runtime.v1.RuntimeService.ListPodSandbox");
  const pb::MethodDescriptor* containers = pool->FindMethodByName("runtime.v1.RuntimeService.ListContainers");
  ASSERT_NE(pods, nullptr);
  ASSERT_NE(containers, nullptr);
  std::string bytes;
  ASSERT_TRUE(Call(*pods, v1::ListPodSandboxRequest(), &bytes).ok());
  v1::ListPodSandboxResponse pods_sent;
  ASSERT_TRUE(pods_sent.ParseFromString(bytes));
  auto pods_listed = service_->ListPodSandbox(ctx_, v1::ListPodSandboxRequest());
  ASSERT_TRUE(pods_listed.ok());
  ASSERT_EQ(pods_sent.items_size(), 1);
  EXPECT_EQ(pods_sent.SerializeAsString(), pods_listed->SerializeAsString());
  v1::ListContainersRequest by_pod;
  by_pod.mutable_filter()->set_pod_sandbox_id(sandbox_id_);
  ASSERT_TRUE(Call(*containers, by_pod, &bytes).ok());
  v1::ListContainersResponse containers_sent;
  ASSERT_TRUE(containers_sent.ParseFromString(bytes));
  ASSERT_EQ(containers_sent.containers_size(), 1);
  EXPECT_EQ(containers_sent.containers(0).id(), container_id_);

  const std::string not_a_message = "\xff\xff\xff\xff";  // a field key whose varint never ends
  for (const pb::MethodDescriptor* method : {pods, containers}) {
    const grpc::Status refused = CallWithBytes(*method, not_a_message);
    EXPECT_EQ(refused.error_code(), Code::INVALID_ARGUMENT) << method->name() << ": " << refused.error_message();
    EXPECT_THAT(refused.error_message(), ::testing::HasSubstr("not a valid message"));
  }
  EXPECT_TRUE(Call(*containers, v1::ListContainersRequest()).ok());
  EXPECT_EQ(Snapshot(), before_);
}

TEST_F(MalformedRequestsTest, AnOversizedRequestIsRefusedAndTheServerGoesOn) {
  const pb::MethodDescriptor* list =
      pb::DescriptorPool::generated_pool()->FindMethodByName("runtime.v1.RuntimeService.ListContainers");
  ASSERT_NE(list, nullptr);
  v1::ListContainersRequest oversized;
  (*oversized.mutable_filter()->mutable_label_selector())["k"] = std::string(kMaxGrpcMessageBytes, 'x');
  const grpc::Status refused = Call(*list, oversized);
  EXPECT_EQ(refused.error_code(), Code::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_FALSE(refused.error_message().empty());
  // Just below the bound is served, and so is the next call.
  v1::ListContainersRequest large;
  (*large.mutable_filter()->mutable_label_selector())["k"] = std::string(kMaxGrpcMessageBytes - 64, 'x');
  EXPECT_TRUE(Call(*list, large).ok());
  EXPECT_TRUE(Call(*list, v1::ListContainersRequest()).ok());
}

}  // namespace
}  // namespace shim
