//===- ChatPage.cpp - The chat page served at "/" -------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// ChatPage.html, embedded at build time (cmake/EmbedText.cmake).
//
//===----------------------------------------------------------------------===//

#include "Hesper/Serving/Server.h"

const char *hesper::serving::chatPageHtml() {
  static const char page[] =
#include "ChatPage.inc"
      ;
  return page;
}
