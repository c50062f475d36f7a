-- Every table and view the warehouse holds (which marts are built).
select table_name
from information_schema.tables
