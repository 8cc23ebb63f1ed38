/* reply — what a chat reply's text holds apart from its answer: the reasoning a
 * model writes before "</think>" (Qwen3's and DeepSeek-R1's chat templates both
 * close it so). Used by the graders, the dataset checkers and the run. */
#ifndef SIXI_TEXT_REPLY_H
#define SIXI_TEXT_REPLY_H

/* The text after the last "</think>" (the whole text when there is none). */
const char *text_after_reasoning(const char *text);
#endif
