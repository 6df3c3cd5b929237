# Writes the text file INPUT into OUTPUT as a C++ raw string literal
# (`R"hesper_embed(...)hesper_embed"`), for a .cpp to #include. Run as
#   cmake -DINPUT=page.html -DOUTPUT=page.inc -P EmbedText.cmake
file(READ "${INPUT}" text)
string(FIND "${text}" ")hesper_embed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's delimiter")
endif()
file(WRITE "${OUTPUT}.tmp" "R\"hesper_embed(${text})hesper_embed\"\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
