//===- Server.cpp - hesper-server's HTTP front ----------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Every route answers JSON; every error is OpenAI's error object with its
// status. Auth, body size and unknown routes are decided before a body is
// read (the pre-routing handler); bodies are parsed by OpenAiApi.cpp. A
// streamed completion is a chunked response whose content provider waits
// for the engine's next pieces; a client that goes away fails a write, and
// the request is cancelled so its slot frees at the next step.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Serving/Server.h"

#include <httplib.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sstream>
#include <thread>

using namespace hesper;
using namespace hesper::serving;

namespace {
const char *kJson = "application/json; charset=utf-8";

/// The routes and whether they need the API key.
struct Route {
  const char *method, *path;
  bool open; ///< served without the key
};
const Route kRoutes[] = {
    {"GET", "/", true},
    {"GET", "/health", true},
    {"GET", "/v1/health", true},
    {"GET", "/v1/models", false},
    {"GET", "/models", false},
    {"GET", "/metrics", false},
    {"POST", "/v1/completions", false},
    {"POST", "/completions", false},
    {"POST", "/v1/chat/completions", false},
    {"POST", "/chat/completions", false},
    {"POST", "/tokenize", false},
    {"POST", "/detokenize", false},
};
} // namespace

struct Server::Impl {
  Engine &engine;
  ApiContext api;
  ServerOptions options;
  httplib::Server http;
  std::atomic<uint64_t> nextId{1};
  std::atomic<uint64_t> rejected{0}, badRequests{0}, httpRequests{0};
  std::atomic<bool> stopped{false};
  int port = 0; ///< where it listens (bind)
  int64_t started = static_cast<int64_t>(std::time(nullptr));

  Impl(Engine &engine, ApiContext api, ServerOptions options)
      : engine(engine), api(std::move(api)), options(std::move(options)) {}

  void log(const std::string &line) {
    if (options.log)
      options.log(line);
  }

  void sendError(httplib::Response &res, const ApiError &e) {
    res.status = e.status;
    res.set_content(errorJson(e), kJson);
    if (e.status == 503)
      ++rejected;
    else if (e.status >= 400 && e.status < 500)
      ++badRequests;
  }

  static const Route *findRoute(const std::string &method,
                                const std::string &path, bool &pathKnown) {
    pathKnown = false;
    for (const Route &r : kRoutes) {
      if (path != r.path)
        continue;
      pathKnown = true;
      if (method == r.method || (method == "HEAD" && !strcmp(r.method, "GET")))
        return &r;
    }
    return nullptr;
  }

  bool authorized(const httplib::Request &req) const {
    if (options.apiKey.empty())
      return true;
    std::string header = req.get_header_value("Authorization");
    const std::string bearer = "Bearer ";
    std::string key = header.rfind(bearer, 0) == 0
                          ? header.substr(bearer.size())
                          : req.get_header_value("X-Api-Key");
    // Compare every byte whatever the first difference.
    unsigned diff = key.size() != options.apiKey.size();
    for (size_t i = 0; i < key.size(); ++i)
      diff |= unsigned(key[i]) ^
              unsigned(options.apiKey[i % std::max<size_t>(
                  1, options.apiKey.size())]);
    return diff == 0;
  }

  /// Auth, routes and body size, before the body is read.
  httplib::Server::HandlerResponse preRoute(const httplib::Request &req,
                                            httplib::Response &res) {
    ++httpRequests;
    if (req.method == "OPTIONS") {
      res.status = 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    bool pathKnown = false;
    const Route *route = findRoute(req.method, req.path, pathKnown);
    if (!route) {
      ApiError e{404, pathKnown ? "the method " + req.method + " is not "
                                      "supported for " + req.path
                                : "no route " + req.method + " " + req.path};
      e.type = "not_found_error";
      sendError(res, e);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!route->open && !authorized(req)) {
      ApiError e{401, "invalid or missing API key (send 'Authorization: "
                      "Bearer <key>')",
                 "authentication_error"};
      sendError(res, e);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.has_header("Content-Length")) {
      const std::string length = req.get_header_value("Content-Length");
      char *end = nullptr;
      unsigned long long n = std::strtoull(length.c_str(), &end, 10);
      if (length.empty() || *end || n > options.maxBodyBytes) {
        sendError(res, ApiError{413, "the body is larger than the limit of " +
                                         std::to_string(options.maxBodyBytes) +
                                         " bytes"});
        res.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  std::string metrics() {
    EngineStats s = engine.stats();
    std::ostringstream out;
    auto metric = [&](const char *name, const char *type, const char *help,
                      double value) {
      out << "# HELP hesper_" << name << " " << help << "\n# TYPE hesper_"
          << name << " " << type << "\nhesper_" << name << " " << value
          << "\n";
    };
    metric("requests_total", "counter",
           "Completion requests accepted by the engine.", s.requests);
    metric("requests_rejected_total", "counter",
           "Requests refused with 503 (slots and queue full).", rejected);
    metric("bad_requests_total", "counter", "Requests answered with a 4xx.",
           badRequests);
    metric("prompt_tokens_total", "counter",
           "Prompt tokens processed (cached prefixes not counted).",
           s.promptTokens);
    metric("generated_tokens_total", "counter", "Tokens generated.",
           s.generatedTokens);
    metric("prompt_seconds_total", "counter",
           "Wall time of prompt processing, summed over requests.",
           s.promptSeconds);
    metric("decode_seconds_total", "counter",
           "Wall time of token generation, summed over requests.",
           s.decodeSeconds);
    metric("prompt_tokens_per_second", "gauge",
           "Prompt tokens per second of prompt processing time.",
           s.promptSeconds > 0 ? s.promptTokens / s.promptSeconds : 0);
    metric("decode_tokens_per_second", "gauge",
           "Generated tokens per second of generation time, per stream.",
           s.decodeSeconds > 0 ? s.generatedTokens / s.decodeSeconds : 0);
    metric("slots_total", "gauge", "Slots (-np).", s.slots);
    metric("slots_busy", "gauge", "Slots running a request.", s.slotsBusy);
    metric("queue_length", "gauge", "Requests waiting for a slot.", s.queued);
    metric("engine_steps_total", "counter", "Engine steps run.", s.steps);
    return out.str();
  }

  void completions(const httplib::Request &req, httplib::Response &res,
                   bool chat);
  void install();
};

void Server::Impl::completions(const httplib::Request &req,
                               httplib::Response &res, bool chat) {
  auto call = std::make_shared<CompletionCall>();
  if (auto e = parseCompletionCall(req.body, chat, api, *call))
    return sendError(res, *e);
  std::string why;
  Engine::Refusal refusal = Engine::Refusal::Invalid;
  auto request = engine.submit(call->generation, why, &refusal);
  if (!request) {
    if (refusal == Engine::Refusal::Invalid)
      return sendError(res, ApiError{400, why});
    res.set_header("Retry-After", "1");
    return sendError(res, ApiError{503, why, "unavailable_error"});
  }
  const std::string id =
      (chat ? "chatcmpl-" : "cmpl-") + std::to_string(nextId++);
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  const std::string what = req.method + " " + req.path;
  auto finished = [this, request, what](const char *how) {
    log(what + " " + how + " slot " + std::to_string(request->slot()) +
        ": prompt " + std::to_string(request->promptTokens()) +
        " tokens (" + std::to_string(request->reusedTokens()) +
        " cached), generated " + std::to_string(request->completionTokens()) +
        ", " + finishReasonName(request->reason()));
  };

  if (!call->stream) {
    std::vector<TokenPiece> pieces = request->waitAll();
    FinishReason reason = request->reason();
    if (reason == FinishReason::Error) {
      finished("500");
      return sendError(res, ApiError{500, request->error(), "server_error"});
    }
    if (reason == FinishReason::Shutdown) {
      finished("503");
      return sendError(res, ApiError{503, request->error(),
                                     "unavailable_error"});
    }
    res.set_content(completionJson(*call, api, id, created, pieces, reason,
                                   request->promptTokens()),
                    kJson);
    finished("200");
    return;
  }

  // Server-sent events: one chunk per batch of pieces the engine made
  // since the last write, a final chunk with the finish reason (and usage
  // when asked), then [DONE]. Shutdown and engine errors end the stream
  // with an error event before [DONE].
  struct Stream {
    bool first = true, ended = false;
  };
  auto stream = std::make_shared<Stream>();
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, call, request, stream, id, created](size_t,
                                                 httplib::DataSink &sink) {
        auto send = [&](const std::string &json) {
          std::string event = "data: " + json + "\n\n";
          return sink.write(event.data(), event.size());
        };
        std::vector<TokenPiece> pieces;
        bool more = request->next(pieces, std::chrono::milliseconds(100));
        if (!sink.is_writable()) {
          request->cancel();
          return false;
        }
        if ((stream->first || !pieces.empty()) &&
            !send(chunkJson(*call, api, id, created, pieces, stream->first,
                            FinishReason::None))) {
          request->cancel();
          return false;
        }
        stream->first = false;
        if (more)
          return true;
        FinishReason reason = request->reason();
        bool ok = true;
        if (reason == FinishReason::Stop || reason == FinishReason::Length) {
          ok = send(chunkJson(*call, api, id, created, {}, false, reason));
          if (ok && call->includeUsage)
            ok = send(usageChunkJson(*call, api, id, created,
                                     request->promptTokens(),
                                     request->completionTokens()));
        } else if (reason != FinishReason::Cancelled) {
          ApiError e{reason == FinishReason::Shutdown ? 503 : 500,
                     request->error(),
                     reason == FinishReason::Shutdown ? "unavailable_error"
                                                      : "server_error"};
          ok = send(errorJson(e));
        }
        if (ok)
          ok = send("[DONE]");
        stream->ended = true;
        sink.done();
        return ok;
      },
      [request, finished](bool success) {
        if (!success) {
          // The engine ends it at its next step; the log line says how.
          request->cancel();
          request->waitAll();
        }
        finished(success ? "200 stream" : "200 stream (client gone)");
      });
}

void Server::Impl::install() {
  http.set_pre_routing_handler(
      [this](const httplib::Request &req, httplib::Response &res) {
        return preRoute(req, res);
      });
  // httplib's own errors (a chunked body past the limit, ...) as JSON.
  httplib::Server::HandlerWithResponse onError =
      [this](const httplib::Request &, httplib::Response &res) {
    if (!res.body.empty())
      return httplib::Server::HandlerResponse::Unhandled;
    ApiError e{res.status, res.status == 413
                               ? "the body is larger than the limit of " +
                                     std::to_string(options.maxBodyBytes) +
                                     " bytes"
                               : "the request could not be read"};
    e.type = res.status >= 500 ? "server_error" : "invalid_request_error";
    res.set_content(errorJson(e), kJson);
    return httplib::Server::HandlerResponse::Handled;
  };
  http.set_error_handler(onError);
  http.set_logger([this](const httplib::Request &req,
                         const httplib::Response &res) {
    // Completions log themselves when they end (with their token counts).
    bool completion = req.path.find("completions") != std::string::npos;
    if (!completion || res.status != 200)
      log(req.method + " " + req.path + " " + std::to_string(res.status));
  });
  // Clients keep their connections (httplib's default closes them after
  // 5 requests or 5 idle seconds, and a client that sends on a connection
  // being closed sees "other side closed").
  http.set_keep_alive_max_count(10000);
  http.set_keep_alive_timeout(60);
  // Each event of a stream leaves at once (no Nagle delay).
  http.set_tcp_nodelay(true);
  http.set_payload_max_length(options.maxBodyBytes);
  http.set_read_timeout(options.timeoutSeconds, 0);
  http.set_write_timeout(options.timeoutSeconds, 0);
  http.set_default_headers({{"Access-Control-Allow-Origin", "*"},
                            {"Access-Control-Allow-Headers",
                             "Authorization, Content-Type"}});
  size_t threads = options.httpThreads > 0
                       ? size_t(options.httpThreads)
                       : size_t(engine.slots()) + 4 + 64;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };

  auto page = [](const httplib::Request &, httplib::Response &res) {
    res.set_content(chatPageHtml(), "text/html; charset=utf-8");
  };
  http.Get("/", page);
  auto health = [](const httplib::Request &, httplib::Response &res) {
    res.set_content("{\"status\":\"ok\"}", kJson);
  };
  http.Get("/health", health);
  http.Get("/v1/health", health);
  auto models = [this](const httplib::Request &, httplib::Response &res) {
    res.set_content(modelsJson(api, started, options.parameters, options.arch),
                    kJson);
  };
  http.Get("/v1/models", models);
  http.Get("/models", models);
  http.Get("/metrics", [this](const httplib::Request &, httplib::Response &res) {
    res.set_content(metrics(), "text/plain; version=0.0.4");
  });
  for (const char *path : {"/v1/completions", "/completions"})
    http.Post(path, [this](const httplib::Request &req,
                           httplib::Response &res) {
      completions(req, res, false);
    });
  for (const char *path : {"/v1/chat/completions", "/chat/completions"})
    http.Post(path, [this](const httplib::Request &req,
                           httplib::Response &res) {
      completions(req, res, true);
    });
  http.Post("/tokenize", [this](const httplib::Request &req,
                                httplib::Response &res) {
    std::string out;
    if (auto e = tokenizeJson(req.body, api, out))
      return sendError(res, *e);
    res.set_content(out, kJson);
  });
  http.Post("/detokenize", [this](const httplib::Request &req,
                                  httplib::Response &res) {
    std::string out;
    if (auto e = detokenizeJson(req.body, api, out))
      return sendError(res, *e);
    res.set_content(out, kJson);
  });
}

Server::Server(Engine &engine, ApiContext api, ServerOptions options)
    : impl(std::make_unique<Impl>(engine, std::move(api),
                                  std::move(options))) {
  impl->install();
}

Server::~Server() { stop(); }

rt::Result<int> Server::bind() {
  const std::string &host = impl->options.host;
  int port = impl->options.port;
  if (port == 0)
    port = impl->http.bind_to_any_port(host);
  else if (!impl->http.bind_to_port(host, port))
    port = -1;
  if (port <= 0)
    return rt::Status::error("cannot listen on " + host + ":" +
                             std::to_string(impl->options.port) +
                             " (in use, or not an address of this machine)");
  impl->port = port;
  return port;
}

bool Server::run() { return impl->http.listen_after_bind(); }

/// Shuts down this process's TCP connections whose local port is `port`:
/// the connections the listener accepted. cpp-httplib (0.11) keeps a
/// worker on each idle keep-alive connection until the client sends or
/// the keep-alive timeout (60 s here) passes, and its stop() waits for the
/// workers: a server that a client had talked to took a minute to stop.
/// A shut-down socket reads as closed at once, so each worker ends.
/// httplib gives no handle on its connections; the process's descriptors
/// (/proc/self/fd) are the sockets, and only accepted connections have the
/// listener's port as theirs (the listener itself is closed by now).
static void closeConnections(int port) {
  if (port <= 0)
    return;
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return;
  int self = dirfd(dir);
  while (struct dirent *entry = readdir(dir)) {
    char *end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (!end || *end || fd < 0 || fd == self)
      continue;
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&local),
                    &length) != 0)
      continue; // not a socket
    int localPort = -1;
    if (local.ss_family == AF_INET)
      localPort = ntohs(reinterpret_cast<sockaddr_in *>(&local)->sin_port);
    else if (local.ss_family == AF_INET6)
      localPort = ntohs(reinterpret_cast<sockaddr_in6 *>(&local)->sin6_port);
    if (localPort == port)
      shutdown(static_cast<int>(fd), SHUT_RDWR);
  }
  closedir(dir);
}

void Server::stop() {
  // Once: the signal thread stops the server, then the destructor calls
  // this again.
  if (impl->stopped.exchange(true))
    return;
  impl->engine.shutdown();
  // The streams write their last events within one wait of the provider.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  impl->http.stop();
  closeConnections(impl->port);
}

