SELECT u.id AS user_id, m.id AS message_id, m.sent_at
FROM users AS u
JOIN messages AS m ON m.sender_id = u.id
WHERE u.country = 'NZ'
UNION ALL
SELECT u.id AS user_id, m.id AS message_id, m.sent_at
FROM users AS u
JOIN messages AS m ON m.receiver_id = u.id
WHERE u.country = 'NZ' AND m.sender_id IS DISTINCT FROM u.id
