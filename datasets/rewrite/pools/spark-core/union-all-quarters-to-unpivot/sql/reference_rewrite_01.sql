SELECT store_id,
       quarter,
       sum(revenue) AS total_revenue,
       count(revenue) AS years_reported
FROM quarterly
UNPIVOT INCLUDE NULLS (revenue FOR quarter IN (q1, q2, q3, q4))
GROUP BY store_id, quarter
