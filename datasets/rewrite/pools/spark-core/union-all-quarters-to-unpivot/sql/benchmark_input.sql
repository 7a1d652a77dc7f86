-- Revenue per store and quarter over all years, and how many years reported it.
SELECT store_id,
       quarter,
       sum(revenue) AS total_revenue,
       count(revenue) AS years_reported
FROM (
    SELECT store_id, 'q1' AS quarter, q1 AS revenue FROM quarterly
    UNION ALL
    SELECT store_id, 'q2' AS quarter, q2 AS revenue FROM quarterly
    UNION ALL
    SELECT store_id, 'q3' AS quarter, q3 AS revenue FROM quarterly
    UNION ALL
    SELECT store_id, 'q4' AS quarter, q4 AS revenue FROM quarterly
) by_quarter
GROUP BY store_id, quarter
