#include "chat_room/chat_room.hpp"

#include <utility>

namespace rivetkit::examples {

Actor<ChatRoomState> chat_room_actor() {
    using Action = ActionContext<ChatRoomState>;
    return Actor<ChatRoomState>()
        .action("sendMessage",
                [](Action& c, std::string sender, std::string text) {
                    ChatMessage message{std::move(sender), std::move(text), c.now_ms()};
                    c.state().messages.push_back(message);
                    c.broadcast("newMessage", message);
                    return message;
                })
        .action("getHistory", [](Action& c) { return std::as_const(c).state().messages; });
}

}  // namespace rivetkit::examples
