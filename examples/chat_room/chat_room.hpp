#pragma once
// chatRoom: a message log every connection sees grow.
//
//   state {messages: [{sender, text, timestamp}]}
//   sendMessage(sender, text) → the stored message; broadcasts "newMessage" [message]
//   getHistory() → messages

#include <cstdint>
#include <string>
#include <vector>

#include "rivetkit/actor.hpp"

namespace rivetkit::examples {

struct ChatMessage {
    std::string sender;
    std::string text;
    std::int64_t timestamp = 0;  // ms since the Unix epoch
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ChatMessage, sender, text, timestamp)

struct ChatRoomState {
    std::vector<ChatMessage> messages;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ChatRoomState, messages)

Actor<ChatRoomState> chat_room_actor();

}  // namespace rivetkit::examples
