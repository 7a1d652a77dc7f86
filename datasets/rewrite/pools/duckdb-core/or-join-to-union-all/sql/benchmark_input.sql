-- Every message an NZ user sent or received, once per (user, message).
SELECT u.id AS user_id, m.id AS message_id, m.sent_at
FROM users AS u
JOIN messages AS m ON m.sender_id = u.id OR m.receiver_id = u.id
WHERE u.country = 'NZ'
