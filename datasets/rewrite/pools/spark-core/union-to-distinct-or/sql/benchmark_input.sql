-- Every (department, priority) pair with an open or a blocked ticket.
SELECT m.department, t.priority
FROM tickets t
JOIN teams m ON m.team_id = t.team_id
WHERE t.status = 'open'
UNION
SELECT m.department, t.priority
FROM tickets t
JOIN teams m ON m.team_id = t.team_id
WHERE t.status = 'blocked'
