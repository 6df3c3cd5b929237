//===- Server.h - hesper-server's HTTP front ---------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The HTTP side of hesper-server, on cpp-httplib (Debian's
// libcpp-httplib-dev): OpenAI's /v1/chat/completions, /v1/completions and
// /v1/models, llama-server's /health, /metrics, /tokenize and /detokenize,
// and the chat page at /. Requests go to an Engine; streamed responses are
// server-sent events. docs/Server.md describes the API.
//
//   serving::Server server(engine, api, options);
//   auto port = server.bind();          // port 0: any free port
//   server.run();                       // until stop() (SIGINT, SIGTERM)
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_SERVING_SERVER_H
#define HESPER_SERVING_SERVER_H

#include "Hesper/Serving/Engine.h"
#include "Hesper/Serving/OpenAiApi.h"

#include <functional>
#include <memory>

namespace hesper::serving {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string apiKey;               ///< empty: no key asked
  size_t maxBodyBytes = 8u << 20;   ///< larger bodies get 413
  int timeoutSeconds = 600;         ///< read/write timeout of a connection
  int httpThreads = 0;              ///< 0: slots + queue + 4
  /// Where the one-line request log goes (null: nowhere).
  std::function<void(const std::string &)> log;
  /// About the model, for /v1/models.
  int64_t parameters = 0;
  std::string arch;
};

class Server {
public:
  Server(Engine &engine, ApiContext api, ServerOptions options);
  ~Server();

  /// Binds the listening socket; returns the port (the chosen one for 0).
  rt::Result<int> bind();
  /// Serves until stop(); returns false if the socket failed.
  bool run();
  /// Ends every request (streams get a final event), then stops listening
  /// and closes the clients' idle keep-alive connections (run() returns
  /// at once). Safe from any thread.
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The chat page served at "/": one HTML file with its script inline.
const char *chatPageHtml();

} // namespace hesper::serving

#endif // HESPER_SERVING_SERVER_H
